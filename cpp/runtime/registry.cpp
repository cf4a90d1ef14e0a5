// The kernel registry. See registry.hpp.
#include "runtime/registry.hpp"

#include <mutex>

#include "runtime/module.hpp"

namespace raptor::runtime {

std::string build_identity(const KernelEntry& entry) {
  const std::string so = entry.module ? entry.module->path().filename().string() : "";
  return so + '\0' + entry.symbol;
}

std::shared_ptr<const KernelEntry> Registry::add(const std::string& digest,
                                                 std::shared_ptr<const KernelEntry> entry) {
  if (!entry) throw std::invalid_argument("raptor: registering a null kernel for " + digest);
  const std::string identity = build_identity(*entry);
  const std::unique_lock lock(mu_);
  auto& builds = entries_[digest];
  for (const auto& b : builds)
    if (build_identity(*b) == identity) return b;
  builds.push_back(std::move(entry));
  return builds.back();
}

std::shared_ptr<const KernelEntry> Registry::find(std::string_view digest) const {
  const std::shared_lock lock(mu_);
  const auto it = entries_.find(digest);
  return it == entries_.end() || it->second.empty() ? nullptr : it->second.front();
}

std::vector<std::shared_ptr<const KernelEntry>> Registry::builds(std::string_view digest) const {
  const std::shared_lock lock(mu_);
  const auto it = entries_.find(digest);
  return it == entries_.end() ? std::vector<std::shared_ptr<const KernelEntry>>{} : it->second;
}

bool Registry::remove(const std::string& digest) {
  const std::unique_lock lock(mu_);
  return entries_.erase(digest) > 0;
}

size_t Registry::size() const {
  const std::shared_lock lock(mu_);
  return entries_.size();
}

Registry& global_registry() {
  static Registry registry;  // see the header: the one intended process-wide object
  return registry;
}

}  // namespace raptor::runtime
