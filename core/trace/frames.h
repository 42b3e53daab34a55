// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/trace/trace.h"

#include <cstddef>
#include <string>
#include <string_view>

namespace headroom {

// Reading stack frames as a user does. PyTorch records C++ frames (with stacks='all') between the Python
// ones: CPython's own evaluation loop (_PyEval_EvalFrameDefault, PyObject_Call, ...), dynamo's frame hooks
// and libc's start-up say nothing about the user's program and are folded away in views.
bool isInterpreterFrame(const Trace& trace, const Frame& frame);
bool isPythonFrame(const Trace& trace, const Frame& frame);
// The allocator and dispatcher machinery every allocation goes through (c10's caching allocator, the snapshot
// recorder, empty/empty_strided, kernel wrappers): never the answer to "who allocated this".
bool isMachineryFrame(const Trace& trace, const Frame& frame);
// A Python frame of the user's own code: outside torch, site-packages and generated inductor code.
bool isUserFrame(const Trace& trace, const Frame& frame);
// The innermost frame of the user's own code: a Python frame outside torch, site-packages and generated
// inductor code; else the innermost Python frame; else the innermost frame that is not interpreter noise.
// npos when the stack is empty.
std::size_t topUserFrame(const Trace& trace, std::uint32_t stack);
// The ATen operator whose call allocated a block: the outermost `at::_ops::NAME::call` frame among the C++
// frames below the stack's innermost Python frame, so the operator Python called (einsum, not the bmm it
// runs; softmax, not its _softmax), as NAME with its overload ("exp", "div_Tensor", "softmax_int"). Empty
// when the trace recorded no C++ frames (stacks='python') or no operator among them.
std::string_view atenOperator(const Trace& trace, std::uint32_t stack);
// "name (file:line)", or "name" when the frame has no file; `fileLine` is "file:line" (what an editor opens).
std::string frameText(const Trace& trace, const Frame& frame);
std::string fileLine(const Trace& trace, const Frame& frame);

} // namespace headroom
