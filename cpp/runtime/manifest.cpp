// Kernel manifests (see manifest.hpp). Format, one item per line:
//   raptor-kernel 2 / digest D / name N / symbol S / so K / dtype float32|float64 /
//   active_set 0|1 / slot <role> <width> <is_vector> <table_of> <dtype> <name> [<rows>] (one line
//   per slot, in order: runtime/interface.hpp's slot_line)
// A manifest of another version is skipped (version 1 had no is_vector, so it could not give
// the shapes the XLA handlers check).
#include "runtime/manifest.hpp"

#include <map>
#include <sstream>

#include "runtime/cache.hpp"
#include "runtime/registry.hpp"

namespace raptor::runtime {

namespace fs = std::filesystem;

namespace {
constexpr int kManifestVersion = 2;
}  // namespace

void write_manifest(const Compiler& compiler, const KernelEntry& e, const std::string& so_key) {
  const fs::path dir = compiler.cache().path / "kernels";
  ensure_private_dir(dir, /*allow_symlink=*/false);
  const KernelInterface& i = e.iface;
  std::ostringstream os;
  os << "raptor-kernel " << kManifestVersion << "\ndigest " << i.digest() << "\nname " << i.name()
     << "\nsymbol " << e.symbol << "\nso " << so_key << "\ndtype " << elem_type_name(i.dtype())
     << "\nactive_set " << (e.active_set ? 1 : 0) << "\n";
  for (const SlotInterface& s : i.slots()) os << slot_line(s) << "\n";
  // Written only when it differs from what is there: every cache hit comes here, and an
  // unchanged manifest rewritten (a temporary file, a write and a rename, per kernel and
  // dtype) was half of a warm build of the performance card's fused plan (0.77 -> 0.37 ms).
  const fs::path dest = dir / (i.digest() + ".kernel");
  const std::string text = os.str();
  if (read_cache_file(dest) != text) write_cache_file(dest, text);
}

std::optional<ParsedManifest> parse_manifest(const std::string& text) {
  std::istringstream in(text);
  std::string word, line, name, digest, dtype;
  int version = 0;
  if (!(in >> word >> version) || word != "raptor-kernel" || version != kManifestVersion)
    return std::nullopt;
  std::getline(in, line);
  ParsedManifest m;
  std::vector<SlotInterface> slots;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::istringstream ls(line);
    ls >> word;
    std::string value, extra;
    if (word == "slot") {
      auto s = parse_slot_line(line);
      if (!s) return std::nullopt;
      slots.push_back(std::move(*s));
      continue;
    }
    if (!(ls >> value) || (ls >> extra)) return std::nullopt;
    if (word == "digest")
      digest = value;
    else if (word == "name")
      name = value;
    else if (word == "symbol")
      m.entry.symbol = value;
    else if (word == "so")
      m.so_key = value;
    else if (word == "dtype")
      dtype = value;
    else if (word == "active_set" && (value == "0" || value == "1"))
      m.entry.active_set = value == "1";
    else
      return std::nullopt;
  }
  const auto float_dtype = elem_type_from_name(dtype);
  if (digest.size() != 64 || m.entry.symbol.empty() || m.so_key.size() != 64 || !float_dtype ||
      (*float_dtype != ElemType::F32 && *float_dtype != ElemType::F64))
    return std::nullopt;
  try {
    m.entry.set_interface(KernelInterface(name, digest, *float_dtype, std::move(slots)));
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
  return m;
}

PreloadResult preload(const Compiler& compiler) {
  PreloadResult r;
  const fs::path dir = compiler.cache().path / "kernels";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return r;
  std::map<std::string, std::shared_ptr<const Module>> modules;
  for (const auto& item : fs::directory_iterator(dir, ec)) {
    if (item.path().extension() != ".kernel") continue;
    const auto text = read_cache_file(item.path());
    std::optional<ParsedManifest> parsed = text ? parse_manifest(*text) : std::nullopt;
    if (!parsed || item.path().stem().string() != parsed->entry.digest) {
      ++r.skipped;
      continue;
    }
    KernelEntry& e = parsed->entry;
    const std::string& key = parsed->so_key;
    auto& module = modules[key];
    if (!module) module = compiler.load_cached(key);
    if (!module || module->find(e.symbol) == nullptr) {
      ++r.skipped;
      continue;
    }
    e.module = module;
    e.fn = module->symbol(e.symbol);
    const std::string digest = e.digest;
    global_registry().add(digest, std::make_shared<const KernelEntry>(std::move(e)));
    ++r.registered;
  }
  return r;
}

}  // namespace raptor::runtime
