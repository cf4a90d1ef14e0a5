// A compiled kernel's interface, described once: per slot its role, width, element type, shape
// rule, and its place among the JAX bridge's operands and results, plus the aliases between
// them. Every boundary reads it: KernelEntry (launch.hpp), manifests (manifest.hpp), the XLA
// handlers' buffer checks (ffi/buffers.hpp), eagle's binding checks and the JAX bridge (through
// raptor_core._core's Interface, bindings/bind_interface.cpp). Start at `KernelInterface::of`.
//
// Layouts (docs/language.md "Parameters"), N the samples of a launch and M a table's entries:
//   Param ()                 Plane / Mutable / InOut: Scalar (N,), Vector[k] (k, N),
//                              Matrix[r, c] (r, c, N)
//   Mask bool (N,)           Table: Scalar (M,), Vector[k] (M, k), Matrix[r, c] (M, r, c)
//   ParamSum (k,) (in JAX, a sum of width 1 is 0-d like its Param)   TableSum: as its Table
//   Random uint32 (4,) (see SlotRole)
// Bridge order (docs/jax.md): operands are the input slots in signature order (Params, planes,
// in-out Mutables' old values, the mask, tables); results are the Mutables and sums in
// signature order, then the mask last.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/ir.hpp"

namespace raptor::runtime {

// What a slot is to a caller. InOut: a Mutable whose old value is read (an operand and a
// result). Mask: the Terminated plane (an operand, and its update a result). Random: the key
// of `rng: Random`, an operand of 4 uint32 words (kRandomWords): the key (jax.random.key_data)
// and the global index of the launch's sample 0 (low word first); eagle's bound launches fill
// it per launch (fold_in(key, n), base 0), the JAX bridge from the call's key and shard.
enum class SlotRole : uint8_t {
  Param,
  Plane,
  Mutable,
  InOut,
  Mask,
  Table,
  ParamSum,
  TableSum,
  Random
};
inline constexpr int kRandomWords = 4;

// An element type of a slot's buffer. Kernels are built for F32 or F64 (every float slot has
// the build's dtype) and the mask is Bool; I32/I64 are for integer planes to come.
enum class ElemType : uint8_t { F32, F64, Bool, I32, I64, U32 };

// "param", "plane", "mutable", "inout", "mask", "table", "param_sum", "table_sum", "random".
std::string_view role_name(SlotRole r);
std::optional<SlotRole> role_from_name(std::string_view name);
// "float32", "float64", "bool", "int32", "int64", "uint32" (NumPy's names).
std::string_view elem_type_name(ElemType t);
std::optional<ElemType> elem_type_from_name(std::string_view name);
int elem_size(ElemType t);  // bytes

// Which shape convention: eagle's binding (docs/runtime.md) or the JAX bridge's (a ParamSum
// of width 1 is 0-d there, like the Param it is the cotangent of).
enum class Layout : uint8_t { Eagle, Jax };

// A shape of rank up to 3 (planes (k, N), tables (M, k); room for Matrix[r, c] planes),
// built without allocating (the XLA handlers check every buffer of every call).
struct Shape {
  int rank = 0;
  std::array<int64_t, 3> dims{};
  std::vector<int64_t> vec() const { return {dims.begin(), dims.begin() + rank}; }
  template <class Dims>  // any sized range of integers (XLA's Span, std::vector)
  bool matches(const Dims& d) const {
    if (static_cast<int>(d.size()) != rank) return false;
    for (int i = 0; i < rank; ++i)
      if (static_cast<int64_t>(d[i]) != dims[i]) return false;
    return true;
  }
};

struct SlotInterface {
  std::string name;
  SlotRole role = SlotRole::Plane;
  int width = 1;           // components: 1 for Param/Mask, k for Vector[k]
  bool is_vector = false;  // declared Vector[k] (a (k, N) plane, (M, k) table)
  int rows = 0;            // declared Matrix[rows, width / rows]: (r, c, N) plane, (M, r, c)
                           //  table; 0: not a matrix
  int table_of = -1;       // TableSum: the Table slot whose M it has; else -1
  bool inout = false;      // TableSum: a scatter target (Mutable[Table]; set by the
                           //  constructor where table_of is the slot itself): an operand
                           //  too, its result the bound values plus the sums
  ElemType dtype = ElemType::F64;
  ir::Combine combine = ir::Combine::Sum;  // ParamSum: added, or hawk.min / hawk.max's
                                           //  min / max (ir/combine.hpp)
  int operand = -1;  // position among the JAX operands; -1: not an operand
  int result = -1;   // position among the JAX results; -1: not a result

  bool is_operand() const { return operand >= 0; }
  bool is_result() const { return result >= 0; }
  bool sized_by_n() const;  // Plane, Mutable, InOut, Mask
  bool is_sum() const { return role == SlotRole::ParamSum || role == SlotRole::TableSum; }
  bool is_table() const { return role == SlotRole::Table; }
};

// An operand whose buffer may become a result's (an in-out Mutable's old value, the mask).
struct Alias {
  int operand = -1;
  int result = -1;
  bool operator==(const Alias&) const = default;
};

class KernelInterface {
 public:
  KernelInterface() = default;
  // From the slots in signature order (name, role, width, is_vector, table_of, dtype given;
  // `operand` and `result` are computed here). Throws std::invalid_argument for a TableSum
  // that names no Table, or a second mask.
  KernelInterface(std::string name, std::string digest, ElemType float_dtype,
                  std::vector<SlotInterface> slots);
  // The interface of `k` built for `float_dtype` (F32 or F64), whose digest is `digest`.
  static KernelInterface of(const ir::Kernel& k, ElemType float_dtype, std::string digest);

  const std::string& name() const { return name_; }
  const std::string& digest() const { return digest_; }
  ElemType dtype() const { return dtype_; }  // the build's float dtype
  int dtype_size() const { return elem_size(dtype_); }

  size_t num_slots() const { return slots_.size(); }
  const SlotInterface& slot(size_t s) const { return slots_[s]; }
  const std::vector<SlotInterface>& slots() const { return slots_; }
  std::string slot_name(int slot) const;  // the name, or "slot <i>"

  const std::vector<int>& operands() const { return operands_; }  // slot of each operand
  const std::vector<int>& results() const { return results_; }    // slot of each result
  const std::vector<Alias>& aliases() const { return aliases_; }
  int mask_slot() const { return mask_; }      // -1: no mask
  int random_slot() const { return random_; }  // -1: the kernel draws no random numbers
  bool has_mask() const { return mask_ >= 0; }
  bool has_table() const;

  // The slot N is read from: the first operand sized by N (planes, in-out Mutables, the mask);
  // -1 when the kernel has none (then N comes from its outputs, or the caller).
  int n_operand_slot() const { return n_operand_; }
  // The first slot in signature order sized by N, operand or not (eagle's binding); -1: none.
  int n_slot() const { return n_slot_; }

  // The shape slot `slot`'s buffer must have, for N samples and the tables' sizes
  // (`table_sizes[t]`: M of Table slot t; other entries are not read).
  std::vector<int64_t> expected_shape(int slot, int64_t n, const std::vector<int64_t>& table_sizes,
                                      Layout layout = Layout::Eagle) const;
  // The same, with `m` the M of the slot's table (a Table's own, a TableSum's table's; not
  // read for other slots).
  Shape shape(int slot, int64_t n, int64_t m, Layout layout = Layout::Eagle) const;

 private:
  std::string name_;
  std::string digest_;
  ElemType dtype_ = ElemType::F64;
  std::vector<SlotInterface> slots_;
  std::vector<int> operands_;
  std::vector<int> results_;
  std::vector<Alias> aliases_;
  int mask_ = -1;
  int random_ = -1;
  int n_operand_ = -1;
  int n_slot_ = -1;
};

// "(3, 16)", "(16,)" and "()", as Python writes shapes.
std::string shape_text(const std::vector<int64_t>& shape);

// A manifest's slot lines, "slot <role> <width> <is_vector> <table_of> <dtype> <name> <rows>", and
// back. parse_slot_line returns nullopt for a line that is not one.
std::string slot_line(const SlotInterface& s);
std::optional<SlotInterface> parse_slot_line(std::string_view line);

}  // namespace raptor::runtime
