// Kernel manifests (see manifest.hpp). Format, one item per line:
//   raptor-kernel 1 / digest D / name N / symbol S / so K / dtype_size 4|8 / active_set 0|1
//   slot <kind> <width> <table_of> <inout> <name>     (one line per slot, in order)
#include "runtime/manifest.hpp"

#include <map>
#include <sstream>

#include "runtime/cache.hpp"
#include "runtime/registry.hpp"

namespace raptor::runtime {

namespace fs = std::filesystem;

void write_manifest(const Compiler& compiler, const KernelEntry& e, const std::string& so_key) {
  const fs::path dir = compiler.cache().path / "kernels";
  ensure_private_dir(dir, /*allow_symlink=*/false);
  std::ostringstream os;
  os << "raptor-kernel 1\ndigest " << e.digest << "\nname " << e.name << "\nsymbol " << e.symbol
     << "\nso " << so_key << "\ndtype_size " << e.dtype_size << "\nactive_set "
     << (e.active_set ? 1 : 0) << "\n";
  for (size_t s = 0; s < e.num_slots(); ++s)
    os << "slot " << static_cast<int>(e.kinds[s]) << " " << e.widths[s] << " " << e.table_of[s]
       << " " << static_cast<int>(e.inout[s]) << " " << e.slot_name(static_cast<int>(s)) << "\n";
  write_cache_file(dir / (e.digest + ".kernel"), os.str());
}

namespace {

bool parse(const std::string& text, KernelEntry& e, std::string& so_key) {
  std::istringstream in(text);
  std::string word, line;
  int version = 0;
  if (!(in >> word >> version) || word != "raptor-kernel" || version != 1) return false;
  while (in >> word) {
    if (word == "digest")
      in >> e.digest;
    else if (word == "name")
      in >> e.name;
    else if (word == "symbol")
      in >> e.symbol;
    else if (word == "so")
      in >> so_key;
    else if (word == "dtype_size")
      in >> e.dtype_size;
    else if (word == "active_set") {
      int a = 0;
      in >> a;
      e.active_set = a != 0;
    } else if (word == "slot") {
      int kind = 0, width = 0, table_of = -1, inout = 0;
      std::string name;
      if (!(in >> kind >> width >> table_of >> inout >> name)) return false;
      if (kind < 0 || kind > static_cast<int>(ir::SlotKind::TableSum)) return false;
      e.kinds.push_back(static_cast<ir::SlotKind>(kind));
      e.widths.push_back(width);
      e.table_of.push_back(table_of);
      e.inout.push_back(static_cast<char>(inout));
      e.slot_names.push_back(name);
    } else {
      return false;
    }
    if (!in) return false;
  }
  return e.digest.size() == 64 && !e.symbol.empty() && so_key.size() == 64 &&
         (e.dtype_size == 4 || e.dtype_size == 8);
}

}  // namespace

PreloadResult preload(const Compiler& compiler) {
  PreloadResult r;
  const fs::path dir = compiler.cache().path / "kernels";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return r;
  std::map<std::string, std::shared_ptr<const Module>> modules;
  for (const auto& item : fs::directory_iterator(dir, ec)) {
    if (item.path().extension() != ".kernel") continue;
    const auto text = read_cache_file(item.path());
    KernelEntry e;
    std::string key;
    if (!text || !parse(*text, e, key) || item.path().stem().string() != e.digest) {
      ++r.skipped;
      continue;
    }
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
