// The kernel registry. See registry.hpp.
#include "runtime/registry.hpp"

#include <mutex>

namespace raptor::runtime {

std::shared_ptr<const KernelEntry> Registry::add(const std::string& digest,
                                                 std::shared_ptr<const KernelEntry> entry) {
  if (!entry) throw std::invalid_argument("raptor: registering a null kernel for " + digest);
  const std::unique_lock lock(mu_);
  const auto [it, inserted] = entries_.try_emplace(digest, std::move(entry));
  return it->second;
}

std::shared_ptr<const KernelEntry> Registry::find(std::string_view digest) const {
  const std::shared_lock lock(mu_);
  const auto it = entries_.find(digest);
  return it == entries_.end() ? nullptr : it->second;
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
