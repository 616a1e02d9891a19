// Dataset::reduce: folds a function over every element, in order, from an
// initial state (tf.data's reduce). The dataset must be finite; the state the
// function returns must keep the initial state's structure (as many
// components, the same dtypes; shapes may change); the first error, from the
// pipeline (naming its stage) or from the function (naming the element),
// ends it.
#include <string>
#include <vector>

#include "sluice/pipeline/dataset.h"

namespace sluice {
namespace {

// InvalidArgument unless `state` has the components and dtypes of `initial`.
Status CheckState(const Element& state, const std::vector<DType>& initial, int64_t element) {
  std::string why;
  if (state.size() != initial.size()) {
    why = std::to_string(state.size()) + " components, the initial state " +
          std::to_string(initial.size());
  } else {
    for (size_t i = 0; i < initial.size() && why.empty(); ++i) {
      if (state[i].dtype() != initial[i]) {
        why = "component " + std::to_string(i) + " " + std::string(DTypeName(state[i].dtype())) +
              ", the initial state's " + std::string(DTypeName(initial[i]));
      }
    }
  }
  if (why.empty()) return Status::OK();
  return Status::InvalidArgument(
      "reduce: the function returned a state of another structure on element " +
      std::to_string(element) + ": " + why);
}

}  // namespace

Result<Element> Dataset::reduce(Element initial, ReduceFn fn) const {
  SLUICE_RETURN_IF_ERROR(status());
  if (!fn) return Status::InvalidArgument("reduce: the function is empty");
  if (cardinality() == kInfiniteCardinality) {
    return Status::InvalidArgument("reduce: " + DebugString() +
                                   " is infinite, so reduce would never return; take() a part");
  }
  std::vector<DType> dtypes;
  for (size_t i = 0; i < initial.size(); ++i) dtypes.push_back(initial[i].dtype());
  SLUICE_ASSIGN_OR_RETURN(Iterator it, iterator());
  Element state = std::move(initial);
  for (int64_t i = 0;; ++i) {
    SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, it.next());
    if (!e) return state;
    Result<Element> next = fn(std::move(state), std::move(*e));
    if (!next.ok()) {
      return next.status().WithContext("reduce: the function failed on element " +
                                       std::to_string(i));
    }
    SLUICE_RETURN_IF_ERROR(CheckState(*next, dtypes, i));
    state = std::move(next).value();
  }
}

}  // namespace sluice
