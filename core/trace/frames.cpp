// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/trace/frames.h"

#include <cctype>
#include <string_view>

namespace headroom {

namespace {
bool startsWith(std::string_view s, std::string_view p) {
    return s.substr(0, p.size()) == p;
}
bool endsWith(std::string_view s, std::string_view p) {
    return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}
bool contains(std::string_view s, std::string_view p) {
    return s.find(p) != std::string_view::npos;
}
} // namespace

bool isInterpreterFrame(const Trace& trace, const Frame& frame) {
    const std::string_view name = trace.strings[frame.name];
    if (startsWith(name, "_Py") || startsWith(name, "__libc_start") || name == "_start" || name == "??")
        return true;
    // CPython's C API: Py + a capital letter or underscore (PyObject_Call, PyEval_EvalCode, Py_RunMain).
    if (name.size() > 2 && startsWith(name, "Py") &&
        (std::isupper(static_cast<unsigned char>(name[2])) || name[2] == '_'))
        return true;
    for (std::string_view hook :
         {"dynamo__custom_eval_frame", "dynamo_eval_custom_code", "method_vectorcall", "cfunction_call",
          "slot_tp_call", "torch::unwind::", "torch::CapturedTraceback::"})
        if (startsWith(name, hook))
            return true;
    return false;
}

bool isMachineryFrame(const Trace& trace, const Frame& frame) {
    const std::string_view name = trace.strings[frame.name];
    for (std::string_view m : {"torch::cuda::(anonymous namespace)::gather",
                               "c10::cuda::CUDACachingAllocator::",
                               "c10::impl::",
                               "c10::Dispatcher::",
                               "c10::TensorImpl::",
                               "c10::intrusive_ptr<",
                               "at::detail::empty",
                               "at::native::empty",
                               "at::empty",
                               "at::(anonymous namespace)::",
                               "at::_ops::",
                               "at::TensorBase::",
                               "at::native::(anonymous namespace)::create_out",
                               "torch::autograd::VariableType::",
                               "at::native::new_",
                               "at::native::zeros",
                               "at::native::ones",
                               "at::native::full",
                               "at::native::clone",
                               "torch::autograd::utils::clone_obey_contract",
                               "at::native::structured_",
                               "at::cuda::(anonymous namespace)::",
                               "at::(anonymous namespace)::wrapper"})
        if (startsWith(name, m))
            return true;
    return false;
}

bool isPythonFrame(const Trace& trace, const Frame& frame) {
    const std::string_view file = trace.strings[frame.filename];
    return endsWith(file, ".py") || endsWith(file, ".pyx");
}

bool isUserFrame(const Trace& trace, const Frame& frame) {
    if (!isPythonFrame(trace, frame))
        return false;
    const std::string_view file = trace.strings[frame.filename];
    return !(contains(file, "/torch/") || contains(file, "\\torch\\") || contains(file, "site-packages") ||
             contains(file, "dist-packages") || contains(file, "torchinductor") || startsWith(file, "<"));
}

std::size_t topUserFrame(const Trace& trace, std::uint32_t stack) {
    if (stack >= trace.stacks.size() || trace.stacks[stack].empty())
        return std::string::npos;
    const auto& frames = trace.stacks[stack];
    std::size_t python = std::string::npos, other = std::string::npos;
    for (std::size_t i = 0; i < frames.size(); ++i) {
        if (isPythonFrame(trace, frames[i])) {
            if (isUserFrame(trace, frames[i]))
                return i;
            if (python == std::string::npos)
                python = i;
        } else if (other == std::string::npos && !isInterpreterFrame(trace, frames[i]) &&
                   !isMachineryFrame(trace, frames[i])) {
            other = i;
        }
    }
    return python != std::string::npos ? python : other != std::string::npos ? other : 0;
}

std::string_view atenOperator(const Trace& trace, std::uint32_t stack) {
    if (stack >= trace.stacks.size())
        return {};
    constexpr std::string_view kPrefix = "at::_ops::";
    std::string_view op;
    for (const Frame& f : trace.stacks[stack]) {
        if (isPythonFrame(trace, f))
            break;
        const std::string_view name = trace.strings[f.name];
        if (!startsWith(name, kPrefix))
            continue;
        const std::string_view rest = name.substr(kPrefix.size());
        const std::size_t end = rest.find("::");
        // Only the dispatcher's entry (::call): ::redispatch frames are the same operator's inner layers.
        if (end != std::string_view::npos && end > 0 && startsWith(rest.substr(end), "::call"))
            op = rest.substr(0, end);
    }
    return op;
}

std::string fileLine(const Trace& trace, const Frame& frame) {
    const std::string& file = trace.strings[frame.filename];
    if (file.empty() || file == "??")
        return {};
    return frame.line > 0 ? file + ":" + std::to_string(frame.line) : file;
}

std::string frameText(const Trace& trace, const Frame& frame) {
    const std::string where = fileLine(trace, frame);
    const std::string& name = trace.strings[frame.name];
    return where.empty() ? name : name + " (" + where + ")";
}

} // namespace headroom
