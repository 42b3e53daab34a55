// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/model/quantization.h"

#include "core/error.h"

#include <cctype>
#include <cmath>
#include <optional>
#include <string_view>
#include <utility>

namespace headroom {

namespace {

using json = nlohmann::json;

double ceilDiv(std::uint64_t a, std::uint64_t b) {
    return b == 0 ? 1.0 : static_cast<double>((a + b - 1) / b);
}

// '*' matches any run of characters (modules_to_not_convert uses "model.layers.*.self_attn"). The
// iterative form backtracks only to the last star, so a hostile pattern costs O(pattern x name), not an
// exponential recursion.
bool globMatch(const std::string& pattern, const std::string& name) {
    std::size_t p = 0, n = 0, star = std::string::npos, resume = 0;
    while (n < name.size()) {
        if (p < pattern.size() && pattern[p] == '*') {
            star = p++;
            resume = n;
        } else if (p < pattern.size() && pattern[p] == name[n]) {
            ++p, ++n;
        } else if (star != std::string::npos) {
            p = star + 1;
            n = ++resume;
        } else {
            return false;
        }
    }
    while (p < pattern.size() && pattern[p] == '*')
        ++p;
    return p == pattern.size();
}

// A regular expression of the subset checkpoints' ignore lists use, as a glob over the whole name:
// re.match anchors at the start, "$" at the end (without it the pattern is a prefix: a trailing '*'); ".*"
// is any run, "\\." and '.' a dot (module names separate with dots only). nullopt for anything else
// (classes, groups, alternatives, counts), which the caller reads by its last name.
std::optional<std::string> regexAsGlob(std::string_view re) {
    std::string glob;
    bool anchored = false;
    if (!re.empty() && re.front() == '^')
        re.remove_prefix(1);
    if (!re.empty() && re.back() == '$' && (re.size() < 2 || re[re.size() - 2] != '\\')) {
        anchored = true;
        re.remove_suffix(1);
    }
    for (std::size_t i = 0; i < re.size(); ++i) {
        const char c = re[i];
        if (c == '.' && i + 1 < re.size() && re[i + 1] == '*') {
            glob += '*';
            ++i;
        } else if (c == '\\' && i + 1 < re.size() && re[i + 1] == '.') {
            glob += '.';
            ++i;
        } else if (c == '.' || std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-') {
            glob += c;
        } else {
            return std::nullopt;
        }
    }
    if (!anchored)
        glob += '*';
    return glob;
}

std::vector<std::string> stringList(const json& q, const char* key, const std::string& at) {
    std::vector<std::string> out;
    auto it = q.find(key);
    if (it == q.end() || it->is_null())
        return out;
    if (!it->is_array())
        throw Error(at + "." + key, "must be a list of module names");
    if (it->size() > 4096)
        throw Error(at + "." + key,
                    "lists " + std::to_string(it->size()) + " modules; at most 4096 are read");
    for (std::size_t i = 0; i < it->size(); ++i) {
        const std::string where = at + "." + key + "[" + std::to_string(i) + "]";
        if (!(*it)[i].is_string())
            throw Error(where, "must be a module name");
        if ((*it)[i].get_ref<const std::string&>().size() > 1024)
            throw Error(where, "is longer than 1024 characters");
        out.push_back((*it)[i].get<std::string>());
    }
    return out;
}

int intIn(const json& q, const char* key, int fallback, int lo, int hi, const std::string& at) {
    auto it = q.find(key);
    if (it == q.end() || it->is_null())
        return fallback;
    if (!it->is_number_integer() || it->get<long long>() < lo || it->get<long long>() > hi)
        throw Error(at + "." + key,
                    "must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi));
    return static_cast<int>(it->get<long long>());
}

} // namespace

double Quantization::matrixBytes(std::uint64_t out, std::uint64_t in) const {
    const double n = static_cast<double>(out) * static_cast<double>(in);
    switch (method) {
    case Method::None:
        return 2 * n;
    case Method::Mxfp4:
        return n / 2 + scaleBytes * n / 32; // two values per byte, one e8m0 scale per 32
    case Method::Fp8:
        if (blockRows > 0 && blockCols > 0)
            return n + 4 * ceilDiv(out, static_cast<std::uint64_t>(blockRows)) *
                           ceilDiv(in, static_cast<std::uint64_t>(blockCols));
        return n + channelScaleBytes * static_cast<double>(out); // one scale per output channel
    case Method::Int: {
        const double groups = groupSize > 0 ? ceilDiv(in, static_cast<std::uint64_t>(groupSize)) : 1;
        const double packed = n * bits / 8;
        const double scales = groups * static_cast<double>(out) * 2;
        const double zeros = name == "compressed-tensors" ? 0 : groups * static_cast<double>(out) * bits / 8;
        return packed + scales + zeros + (gIdx ? 4.0 * static_cast<double>(in) : 0);
    }
    }
    return 2 * n;
}

namespace {
// The layer a dotted name is in, when it says one: "model.layers.12.mlp" -> 12; -1 otherwise (a pattern
// with a wildcard there, or a module outside the layers).
int layerOf(std::string_view name) {
    constexpr std::string_view key = "model.layers.";
    if (name.rfind(key, 0) != 0)
        return -1;
    const std::size_t start = key.size();
    std::size_t i = start;
    int n = 0;
    while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i])) && i - start < 9)
        n = n * 10 + (name[i++] - '0');
    if (i == start || (i < name.size() && name[i] != '.'))
        return -1;
    return n;
}

bool matchesAny(const std::vector<std::string>& patterns, const std::string& module) {
    for (const std::string& p : patterns) {
        if (p.empty())
            continue;
        // A pattern names a module or one of its parents: "lm_head", "model.layers.*.self_attn".
        if (globMatch(p, module) || globMatch(p + ".*", module))
            return true;
        // compressed-tensors also writes "re:" regular expressions, matched from the start of a linear
        // layer's own name (re.match; vLLM's should_ignore_layer, llm-compressor's ignore). Those built of
        // literals, ".*", "\\." and "$" (".*linear_attn.*", ".*mlp.gate$") are read exactly; others by the
        // name they end in.
        if (p.rfind("re:", 0) == 0) {
            if (const std::optional<std::string> g = regexAsGlob(p.substr(3))) {
                if (globMatch(*g, module))
                    return true;
                continue;
            }
            std::string tail = p.substr(3);
            while (!tail.empty() && (tail.back() == '$'))
                tail.pop_back();
            const auto dot = tail.find_last_of(".*");
            const std::string last = dot == std::string::npos ? tail : tail.substr(dot + 1);
            if (!last.empty() && module.size() >= last.size() &&
                module.compare(module.size() - last.size(), last.size(), last) == 0)
                return true;
        }
    }
    return false;
}
} // namespace

void Quantization::indexSkips() {
    layerSkip.clear();
    generalSkip.clear();
    for (const std::string& p : skip) {
        const int l = layerOf(p);
        if (l >= 0)
            layerSkip[l].push_back(p);
        else
            generalSkip.push_back(p);
    }
}

bool Quantization::skips(const std::string& module) const {
    if (matchesAny(generalSkip, module))
        return true;
    const int l = layerOf(module);
    const auto named = l >= 0 ? layerSkip.find(l) : layerSkip.end();
    return named != layerSkip.end() && matchesAny(named->second, module);
}

std::string Quantization::label() const {
    switch (method) {
    case Method::None:
        return "none";
    case Method::Mxfp4:
        return "mxfp4";
    case Method::Fp8:
        return blockRows > 0 ? "fp8 block " + std::to_string(blockRows) + "x" + std::to_string(blockCols)
                             : "fp8 per channel";
    case Method::Int:
        return name + " int" + std::to_string(bits) +
               (groupSize > 0 ? " g" + std::to_string(groupSize) : std::string());
    }
    return name;
}

Quantization readQuantization(const json& config, const std::string& path) {
    Quantization q;
    auto it = config.find("quantization_config");
    if (it == config.end() || it->is_null())
        return q;
    const std::string at = path.empty() ? "quantization_config" : path + ".quantization_config";
    if (!it->is_object())
        throw Error(at, "must be an object");
    const json& c = *it;
    auto m = c.find("quant_method");
    if (m == c.end() || !m->is_string())
        throw Error(at + ".quant_method", "missing; it names how the checkpoint stores its weights");
    q.name = m->get<std::string>();
    q.skip = stringList(c, "modules_to_not_convert", at);
    for (const char* key : {"ignored_layers", "ignore"})
        for (auto& s : stringList(c, key, at))
            q.skip.push_back(std::move(s));
    // A multimodal checkpoint names its language model's modules under language_model
    // ("language_model.model.layers.3.self_attn", or "model.language_model.layers.3..." in transformers'
    // newer layout), Nemotron-H under backbone ("backbone.layers.3.mixer"); Headroom's names are the text
    // model's ("model.layers.3.self_attn").
    for (std::string& p : q.skip)
        for (const auto& [from, to] :
             {std::pair<std::string_view, std::string_view>{"language_model.model.", "model."},
              {"model.language_model.", "model."},
              {"language_model.", ""},
              {"backbone.", "model."}})
            if (p.rfind(from, 0) == 0) {
                p = std::string(to) + p.substr(from.size());
                break;
            }
    q.indexSkips();
    if (q.name == "mxfp4") {
        q.method = Quantization::Method::Mxfp4;
        q.bits = 4;
        q.groupSize = 32;
    } else if (q.name == "fp8") {
        q.method = Quantization::Method::Fp8;
        q.bits = 8;
        auto b = c.find("weight_block_size");
        if (b != c.end() && !b->is_null()) {
            if (!b->is_array() || b->size() != 2 || !(*b)[0].is_number_integer() ||
                !(*b)[1].is_number_integer() || (*b)[0].get<long long>() < 1 ||
                (*b)[1].get<long long>() < 1 || (*b)[0].get<long long>() > 1 << 20 ||
                (*b)[1].get<long long>() > 1 << 20)
                throw Error(at + ".weight_block_size", "must be two positive integers [rows, columns]");
            q.blockRows = static_cast<int>((*b)[0].get<long long>());
            q.blockCols = static_cast<int>((*b)[1].get<long long>());
        }
    } else if (q.name == "fbgemm_fp8") {
        // transformers' integrations/fbgemm_fp8.py (FbgemmFp8Linear, and FbgemmFp8Llama4TextExperts for
        // Llama 4's batched experts): float8_e4m3fn weights, a float32 scale per output row; the
        // activation_scale_ub is one scalar.
        q.method = Quantization::Method::Fp8;
        q.bits = 8;
        q.channelScaleBytes = 4;
    } else if (q.name == "gptq" || q.name == "awq") {
        q.method = Quantization::Method::Int;
        q.bits = intIn(c, "bits", 4, 2, 8, at);
        if (c.contains("w_bit"))
            q.bits = intIn(c, "w_bit", 4, 2, 8, at);
        const int g = c.contains("q_group_size") ? intIn(c, "q_group_size", 128, -1, 1 << 20, at)
                                                 : intIn(c, "group_size", 128, -1, 1 << 20, at);
        q.groupSize = g > 0 ? g : 0;
        q.gIdx = q.name == "gptq"; // AutoGPTQ's QuantLinear always stores g_idx
    } else if (q.name == "compressed-tensors") {
        // The weights of the first config group decide the layout (one group covers "Linear" in practice).
        const json* w = nullptr;
        auto groups = c.find("config_groups");
        if (groups != c.end() && groups->is_object())
            for (const auto& [name, g] : groups->items())
                if (g.is_object() && g.contains("weights") && g["weights"].is_object()) {
                    w = &g["weights"];
                    break;
                }
        if (!w)
            throw Error(at + ".config_groups",
                        "no group with \"weights\": cannot tell how weights are stored");
        const std::string wat = at + ".config_groups.weights";
        const int bits = intIn(*w, "num_bits", 8, 2, 16, wat);
        const std::string type = w->value("type", std::string("int"));
        if (bits == 8 && type == "float") {
            q.method = Quantization::Method::Fp8;
            q.bits = 8;
            auto b = w->find("block_structure");
            if (b != w->end() && b->is_array() && b->size() == 2 && (*b)[0].is_number_integer() &&
                (*b)[1].is_number_integer() && (*b)[0].get<long long>() > 0 && (*b)[1].get<long long>() > 0 &&
                (*b)[0].get<long long>() <= 1 << 20 && (*b)[1].get<long long>() <= 1 << 20) {
                q.blockRows = static_cast<int>((*b)[0].get<long long>());
                q.blockCols = static_cast<int>((*b)[1].get<long long>());
            }
        } else if (bits < 16) {
            q.method = Quantization::Method::Int;
            q.bits = bits;
            const int g = intIn(*w, "group_size", 0, -1, 1 << 20, wat);
            q.groupSize = g > 0 ? g : 0;
        }
    } else if (q.name == "bitsandbytes") {
        // Quantised on load; the checkpoint itself is usually 16-bit. Plan it as stored unless the config
        // says it was saved quantised, which load_in_4bit / load_in_8bit describe.
        if (c.value("load_in_4bit", false)) {
            q.method = Quantization::Method::Int;
            q.bits = 4;
            q.groupSize = intIn(c, "bnb_4bit_blocksize", 64, 16, 4096, at);
        } else if (c.value("load_in_8bit", false)) {
            q.method = Quantization::Method::Int;
            q.bits = 8;
        }
    } else {
        throw Error(
            at + ".quant_method",
            "unknown quantisation '" + q.name +
                "' (known: mxfp4, fp8, fbgemm_fp8, gptq, awq, compressed-tensors, bitsandbytes); give "
                "inference.weight_dtype to plan it with a uniform dtype");
    }
    return q;
}

} // namespace headroom
