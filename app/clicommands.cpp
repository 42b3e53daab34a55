// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/clicommands.h"

#include "core/allocator/replay.h"
#include "core/checkednumbers.h"
#include "core/compare/calibration.h"
#include "core/compare/comparison.h"
#include "core/compare/tracediff.h"
#include "core/error.h"
#include "core/io/allocatorwhatifjson.h"
#include "core/io/attributionrulesjson.h"
#include "core/io/bytesformat.h"
#include "core/io/codeprofile.h"
#include "core/io/comparejson.h"
#include "core/io/estimatejson.h"
#include "core/io/estimatewords.h"
#include "core/io/fleetjson.h"
#include "core/io/jsontext.h"
#include "core/io/scenariojson.h"
#include "core/io/servingcases.h"
#include "core/io/timelinejson.h"
#include "core/io/tracesummaryjson.h"
#include "core/io/validation.h"
#include "core/model/hfconfig.h"
#include "core/model/presets.h"
#include "core/plan/estimator.h"
#include "core/plan/gpucatalogue.h"
#include "core/plan/settingnames.h"
#include "core/serve/engineversions.h"
#include "core/serve/estimate.h"
#include "core/trace/formats/tracereader.h"
#include "core/trace/traceloadjob.h"
#include "core/trace/tracesummary.h"
#include "core/version.h"
#include "ui/common/chartexport.h"
#include "ui/planner/breakdownchart.h"
#include "ui/planner/report.h"
#include "ui/traceview/timelinerenderer.h"

#include <QSaveFile>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <optional>
#include <sstream>

namespace headroom {

namespace {

constexpr const char* kUsage =
    "usage: headroom-cli COMMAND [ARGS]\n"
    "\n"
    "commands:\n"
    "  estimate SCENARIO.json [--json]         per-GPU memory estimate (docs/formats.md section 3)\n"
    "  params (--hf-config CONFIG.json | --preset NAME) [--json]\n"
    "                                          exact parameter count, total and active per token\n"
    "  trace-summary TRACE [--json]            allocated/active/reserved peaks of a recorded trace\n"
    "                                          (PyTorch snapshot pickle or JSON, profiler trace, memory\n"
    "                                          timeline, nvidia-smi CSV; gzip allowed; docs/formats.md "
    "section 5)\n"
    "  fleet (DIR | FILES...) [--layout tp=8,pp=4,cp=1,ep=1] [--scenario S.json] [--json]\n"
    "                                          a whole job's rank files (traces, or trace-summary\n"
    "                                          --json documents made on the nodes): each rank's peak,\n"
    "                                          the worst rank, outliers, per-stage maxima\n"
    "                                          (docs/formats.md section 13)\n"
    "  timeline TRACE [--scenario S.json] [--buckets N] [--device K] [--rules R.json] [--json]\n"
    "                                          memory by category over the run: allocated, reserved and\n"
    "                                          each category per stretch of time (docs/formats.md\n"
    "                                          section 14)\n"
    "  render (SCENARIO.json | TRACE [--by-category] [--by-allocation] [--scenario S.json])\n"
    "         -o OUT.(png|svg|pdf) [--size WxH] [--scale N]\n"
    "                                          the stacked per-GPU chart, or the trace's timeline as the\n"
    "                                          application draws it (memory by category, every\n"
    "                                          allocation in its place, the plan over the run)\n"
    "  report SCENARIO.json [TRACE] -o OUT.(pdf|md) [--rules R.json]\n"
    "                                          a one-page report: settings, per-GPU breakdown, strategies\n"
    "                                          or serving capacity, ranked changes, and with a trace the\n"
    "                                          measured peak beside the estimate (PDF, or Markdown + PNGs)\n"
    "  compare SCENARIO.json TRACE [--rules R.json] [--json]\n"
    "                                          the estimate beside the trace's allocated peak, by category\n"
    "                                          (docs/formats.md section 6)\n"
    "  diff TRACE_A TRACE_B [--scenario S.json] [--rules R.json] [--json]\n"
    "                                          two runs compared at their peaks: totals, by category, by "
    "top\n"
    "                                          user frame, and allocations found in only one of them\n"
    "  calibrate SCENARIO.json TRACE [SCENARIO.json TRACE]... -o OUT.headroom.json [--own-profile]\n"
    "          [--json]                        fit the scenario's implementation factors to recorded runs\n"
    "                                          (docs/formats.md section 7); OUT is the first scenario, "
    "calibrated;\n"
    "                                          runs of code Headroom has tables of (cs336_basics) are "
    "fitted\n"
    "                                          against that code's, unless --own-profile\n"
    "  allocator-whatif TRACE [--expandable-segments] [--max-split-size-mb N]\n"
    "                   [--roundup-power2-divisions N] [--garbage-collection-threshold F]\n"
    "                   [--memory-fraction F] [--device-memory-gib G] [--json]\n"
    "                                          replay a snapshot through a model of PyTorch's caching\n"
    "                                          allocator, as recorded and under other settings\n"
    "                                          (docs/formats.md section 10)\n"
    "  serving-logs CASES.json [--json]      serving engines' start-up logs beside the plan, part by part\n"
    "                                          (budget, weights, non-torch, profiled step, KV pool), fit\n"
    "                                          and validate runs apart (docs/formats.md section 15)\n"
    "  validate CASES.json... [--rules R.json] [--summary] [--json]\n"
    "                                          the estimate against every run a cases file lists\n"
    "                                          (published peaks, recorded traces), fit and validate runs\n"
    "                                          apart, as Markdown tables (docs/formats.md section 11);\n"
    "                                          --summary: the errors per framework and counter only\n"
    "  rules                                   the attribution rules (frame text -> category) as JSON, to\n"
    "                                          edit and pass back with --rules\n"
    "  presets [--json]                        model presets\n"
    "  gpus [--json]                           GPU catalogue\n"
    "  --version                               the version and the libraries Headroom uses\n"
    "\n"
    "exit codes: 0 ok, 1 bad input, 2 usage\n";

struct Args {
    std::vector<std::string> positional;
    bool json = false;
    std::optional<std::string> output, hfConfig, preset, size, scenario, rules, scale;
    std::optional<std::string> layout;             // fleet
    std::optional<std::string> buckets, device;    // timeline
    bool byCategory = false, byAllocation = false; // render
    bool ownProfile = false;                       // calibrate
    bool summary = false;                          // validate
    // allocator-whatif
    bool expandableSegments = false;
    std::optional<std::string> maxSplitSizeMb, roundupDivisions, gcThreshold, memoryFraction, deviceMemoryGib;
};

// Throws std::invalid_argument for usage errors.
Args parseArgs(const std::vector<std::string>& args, std::size_t from) {
    Args a;
    for (std::size_t i = from; i < args.size(); ++i) {
        const std::string& s = args[i];
        auto value = [&](std::optional<std::string>& into) {
            if (i + 1 >= args.size())
                throw std::invalid_argument(s + " needs a value");
            into = args[++i];
        };
        if (s == "--json")
            a.json = true;
        else if (s == "-o" || s == "--output")
            value(a.output);
        else if (s == "--scenario")
            value(a.scenario);
        else if (s == "--rules")
            value(a.rules);
        else if (s == "--hf-config")
            value(a.hfConfig);
        else if (s == "--preset")
            value(a.preset);
        else if (s == "--size")
            value(a.size);
        else if (s == "--scale")
            value(a.scale);
        else if (s == "--layout")
            value(a.layout);
        else if (s == "--buckets")
            value(a.buckets);
        else if (s == "--device")
            value(a.device);
        else if (s == "--summary")
            a.summary = true;
        else if (s == "--by-category")
            a.byCategory = true;
        else if (s == "--by-allocation")
            a.byAllocation = true;
        else if (s == "--own-profile")
            a.ownProfile = true;
        else if (s == "--expandable-segments")
            a.expandableSegments = true;
        else if (s == "--max-split-size-mb")
            value(a.maxSplitSizeMb);
        else if (s == "--roundup-power2-divisions")
            value(a.roundupDivisions);
        else if (s == "--garbage-collection-threshold")
            value(a.gcThreshold);
        else if (s == "--memory-fraction")
            value(a.memoryFraction);
        else if (s == "--device-memory-gib")
            value(a.deviceMemoryGib);
        else if (s.size() > 1 && s[0] == '-')
            throw std::invalid_argument("unknown option " + s);
        else
            a.positional.push_back(s);
    }
    return a;
}

// A text of several lines under a two-space indent.
std::string indented(std::string text) {
    for (std::size_t at = text.find('\n'); at != std::string::npos; at = text.find('\n', at + 3))
        text.replace(at, 1, "\n  ");
    return text;
}

std::string pct(double part, double whole) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%5.1f%%", whole > 0 ? 100.0 * part / whole : 0.0);
    return buf;
}

std::string gib(double b) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%10.2f", b / 1073741824.0);
    return buf;
}

void printEstimate(std::ostream& out, const Scenario& sc, const Estimate& est) {
    const auto& c = sc.cluster;
    // The same words as the window's verdict and the report's (core/io/estimatewords.h).
    const EstimateWords words = describeEstimate(sc, est, ByteUnit::GiB);
    out << (sc.name.empty() ? std::string("(unnamed scenario)") : sc.name) << "\n";
    out << "  " << words.verdict << "\n  " << words.setup;
    if (c.expertParallel > 1)
        out << ", expert " << c.expertParallel;
    out << "\n  " << words.limits << "\n";
    out << "  model " << sc.modelLabel << ": " << formatCount(est.parameters) << " parameters";
    if (est.activeParameters != est.parameters)
        out << " (" << formatCount(est.activeParameters) << " active per token)";
    if (sc.mode == Mode::Training && est.trainableParameters != est.parameters && est.parameters > 0) {
        // As PEFT's print_trainable_parameters: trainable of all, and the share.
        char share[32];
        std::snprintf(share, sizeof share, "%.4f",
                      100.0 * static_cast<double>(est.trainableParameters) /
                          static_cast<double>(est.parameters));
        const FineTuning& ft = sc.training.fineTuning;
        out << ", " << formatCount(est.trainableParameters) << " trainable (" << share
            << "%: " << labelOf(fineTuneMethodNames(), ft.method) << " rank " << ft.rank << " on";
        for (const std::string& t : ft.targets)
            out << " " << t;
        if (ft.baseQuantization != BaseQuantization::None)
            out << ", base " << labelOf(baseQuantizationNames(), ft.baseQuantization);
        out << ")";
    }
    // The settings' names as the window and the report show them (core/plan/settingnames.h).
    if (sc.mode == Mode::Training)
        out << "\n  " << labelOf(frameworkNames(), sc.training.framework)
            << (sc.training.frameworkVersion.empty() ? "" : " " + sc.training.frameworkVersion)
            << ", checkpointing " << labelOf(checkpointingNames(), sc.training.checkpointing) << ", "
            << labelOf(optimizerNames(), sc.training.optimizer) << " step "
            << (sc.training.pagedOptimizer ? "paged (bitsandbytes, in place)"
                                           : labelOf(optimizerImplNames(), sc.training.optimizerImpl))
            << "\n  " << indented(words.record);
    else {
        out << "\n  engine " << labelOf(engineNames(), sc.inference.engine);
        if (const EngineVersion* v = engineVersionOf(sc))
            out << " (" << v->name << ": " << v->modelRunner << ")";
        if (!words.record.empty())
            out << "\n  " << indented(words.record);
    }
    out << "\n\n";
    out << "  per GPU (stage " << est.mostLoadedStage << ", peak in " << phaseName(est.peakPhase)
        << ")      GiB   share\n";
    for (std::size_t i = 0; i < kCategoryCount; ++i) {
        const Category cat = categoryAt(i);
        out << "  " << std::left << std::setw(26) << categoryLabel(cat, est.serving.engine) << std::right
            << gib(est.perGpu[cat]) << "  " << pct(est.perGpu[cat], est.peakBytes) << "\n";
        // Fine-tuning: which of the weights are the frozen base and which train (the gradients and the
        // optimizer's states are the trained ones' only).
        if (cat == Category::Weights && est.frozenWeightBytes() > 0) {
            const double frozen = est.frozenWeightBytes(), trained = est.perGpu[cat] - frozen;
            out << "  " << std::left << std::setw(26) << "  frozen base" << std::right << gib(frozen) << "  "
                << pct(frozen, est.peakBytes) << "\n";
            out << "  " << std::left << std::setw(26) << "  trained (adapters)" << std::right << gib(trained)
                << "  " << pct(trained, est.peakBytes) << "\n";
        }
        // torchtitan's eager blocks: the part of the overhead that is a fitted term, not a modelled tensor.
        if (cat == Category::AllocatorOverhead && est.eagerBlocksExcessBytes() > 0)
            out << "  " << std::left << std::setw(26) << "  eager blocks (fitted)" << std::right
                << gib(est.eagerBlocksExcessBytes()) << "  "
                << pct(est.eagerBlocksExcessBytes(), est.peakBytes) << "\n";
    }
    out << "  " << std::left << std::setw(26) << "Peak" << std::right << gib(est.peakBytes) << "\n";
    out << "  " << std::left << std::setw(26) << "Capacity" << std::right << gib(est.capacityBytes) << "\n";
    // PyTorch's own counters at the peak, which is what training logs print: torchtitan and torchtune the
    // reserved figure, Megatron the allocated one.
    if (sc.mode == Mode::Training)
        out << "  " << std::left << std::setw(26) << "  PyTorch allocated" << std::right
            << gib(est.allocatedPeakBytes) << "  (torch.cuda.max_memory_allocated)\n"
            << "  " << std::left << std::setw(26) << "  PyTorch reserved" << std::right
            << gib(est.reservedPeakBytes) << "  (torch.cuda.max_memory_reserved)\n";
    if (est.wrappedReservedBytes() > 0)
        // What fsdp_qlora logs as reserved_after_model_wrap: the replay of FSDP1's wrap, before any step.
        out << "  " << std::left << std::setw(26) << "    once wrapped" << std::right
            << gib(est.wrappedReservedBytes()) << "  (reserved after FSDP1 wraps the model, before a step)\n";
    const ServingEstimate& sv = est.serving;
    if (est.pagedToHostBytes > 0 && est.fits)
        // A paged optimizer's states beyond the GPU's room live in host memory (unified memory).
        out << "  " << std::left << std::setw(26) << "Paged to host" << std::right << gib(est.pagedToHostBytes)
            << "  fits (the paged optimizer's states the GPU has no room for)\n\n";
    else
        out << "  " << std::left << std::setw(26) << (est.headroomBytes() >= 0 ? "Headroom" : "Over by")
            << std::right << gib(std::abs(est.headroomBytes())) << "  " << (est.fits ? "fits" : "DOES NOT FIT")
            << "\n\n";
    if (sc.mode == Mode::Inference && sv.engine) {
        const bool vllm = sc.inference.engine == Engine::Vllm;
        out << "  " << (vllm ? "vLLM" : "SGLang") << " budget " << formatBytes(sv.budgetBytes) << " ("
            << (vllm ? "gpu_memory_utilization x " : "mem_fraction_static x free after context and NCCL, ")
            << formatBytes(sv.budgetBaseBytes) << "); one step of "
            << formatCount(static_cast<unsigned long long>(sv.stepTokens)) << " tokens from " << sv.maxNumSeqs
            << " requests: " << formatBytes(sv.profiledBytes);
        if (sv.flashinferSampler)
            out << " (sampled with FlashInfer)";
        if (vllm)
            out << "; non-torch " << formatBytes(sv.nonTorchBytes);
        if (sv.nvlsBytes > 0)
            out << (vllm ? " (NCCL's NVLS buffers " : "; NCCL's NVLS buffers ") << formatBytes(sv.nvlsBytes)
                << (vllm ? ")" : "");
        if (sv.ncclSetupBytes > 0)
            out << "; NCCL set up before the budget " << formatBytes(sv.ncclSetupBytes);
        if (sv.loadReservedBytes > 0)
            // What SGLang logs as the load's "mem usage": the weights and the allocator's segments round
            // them.
            out << "; the load holds " << formatBytes(est.perGpu[Category::Weights] + sv.loadReservedBytes)
                << " (" << formatBytes(sv.loadReservedBytes)
                << " of it allocator segments and the rotary table, beyond the weights)";
        if (sv.cudaGraphBytes > 0 && sv.cudaGraphsBeyondBudget)
            out << "; CUDA graphs " << formatBytes(sv.cudaGraphBytes)
                << " captured after the pool, beyond the budget (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0)";
        else if (sv.cudaGraphBytes > 0)
            out << "; CUDA graphs " << formatBytes(sv.cudaGraphBytes)
                << " estimated in the budget (the same pool without the estimate: gpu_memory_utilization "
                << std::fixed << std::setprecision(4) << sv.utilizationForTheSamePool() << std::defaultfloat
                << ")";
        out << "\n";
        out << "  KV cache pool: " << formatBytes(sv.poolBytes) << " = "
            << formatCount(static_cast<unsigned long long>(std::max(0LL, sv.kvCacheTokens))) << " tokens ("
            << formatCount(static_cast<unsigned long long>(sv.kvBytesPerToken))
            << " bytes per token per GPU, blocks of " << sv.blockSize << ")\n";
        if (sv.stateBytesPerRequest > 0)
            out << "  linear-attention state: " << std::fixed << std::setprecision(1)
                << sv.stateBytesPerRequest / 1048576.0 << std::defaultfloat
                << " MiB per request per GPU, whatever its length\n";
        if (sv.stateSlots > 0)
            out << "  state pool (mamba_full_memory_ratio " << sc.inference.mambaFullMemoryRatio
                << "): " << formatCount(static_cast<unsigned long long>(sv.stateSlots))
                << " requests' states, "
                << formatBytes(static_cast<double>(sv.stateSlots) * sv.stateBytesPerRequest) << "\n";
        out << "  maximum concurrency for " << formatCount(static_cast<unsigned long long>(sv.requestLength))
            << " tokens per request: " << std::fixed << std::setprecision(2) << sv.maxConcurrency << "x\n"
            << std::defaultfloat;
        if (sv.refusedAtStartup())
            out << "  " << formatBytes(sv.freeAtStartupBytes)
                << " free at start-up (the GPU less the CUDA context and NCCL) is less than the budget: vLLM "
                   "refuses to start\n";
        else if (sv.availableBytes <= 0)
            out << "  no memory left for the KV cache: weights and the profiled step exceed the budget\n";
        else if (sv.kvCacheTokens < sv.requestLength && sc.inference.engine == Engine::Sglang)
            out << "  SGLang starts but takes requests of at most "
                << formatCount(static_cast<unsigned long long>(sv.kvCacheTokens - 1))
                << " tokens (min(context_length, pool) - 1, scheduler.py max_req_input_len)\n";
        else if (sv.kvCacheTokens < sv.requestLength)
            out << "  the pool cannot hold one request of max_model_len tokens: vLLM refuses to start\n";
    } else {
        if (sc.mode == Mode::Inference && sc.inference.framework == Framework::Cs336Basics)
            out << "  framework cs336_basics: one forward over each sequence, no KV cache\n";
        else if (sc.keepsNoKvCache())
            out << "  one forward over each sequence, no KV cache\n";
        else if (sc.mode == Mode::Inference)
            out << "  KV cache: " << formatCount(static_cast<unsigned long long>(sv.kvCacheTokens))
                << " tokens (" << formatCount(static_cast<unsigned long long>(sv.kvBytesPerToken))
                << " bytes per token per GPU"
                << (sv.stateBytesPerRequest > 0
                        ? ", and " + std::to_string(std::llround(sv.stateBytesPerRequest / 1048576.0)) +
                              " MiB of linear-attention state per request"
                        : std::string())
                << ")\n";
    }
    out << "  longest " << (sc.mode == Mode::Training ? "sequence" : "context")
        << " that fits: " << maxSequenceLength(sc) << "\n";
    if (sc.cluster.pipelineParallel > 1) {
        out << "\n  pipeline stages (layers, peak GiB):\n";
        for (const auto& r : est.ranks)
            out << "    stage " << r.stage << ": layers " << r.firstLayer << "-"
                << r.firstLayer + r.layers - 1 << ", " << gib(r.peak.total()) << "\n";
    }
    if (c.offloadOptimizer || c.offloadParameters || est.offload.cpuBytesPerGpu > 0)
        out << "\n  offload: " << formatBytes(est.offload.cpuBytesPerGpu) << " host memory per GPU; PCIe "
            << formatBytes(est.offload.hostToDeviceBytes, ByteUnit::GB) << " in, "
            << formatBytes(est.offload.deviceToHostBytes, ByteUnit::GB)
            << " out per step = " << est.offload.secondsPerStep << " s at " << c.pcieGBps << " GB/s\n";
    const auto savings = rankSavings(sc);
    if (!savings.empty() && sv.engine) {
        out << "\n  single changes that serve more requests at once:\n";
        // One column for the figures: as wide as the longest change (an environment variable's name).
        std::size_t width = 55;
        for (const auto& s : savings)
            width = std::max(width, s.description.size());
        for (const auto& s : savings)
            out << "    " << std::left << std::setw(static_cast<int>(width)) << s.description << ' '
                << std::right << (s.kvTokensGained >= 0 ? "+" : "-")
                << formatCount(static_cast<unsigned long long>(std::llabs(s.kvTokensGained))) << " tokens, "
                << std::fixed << std::setprecision(2) << s.concurrencyAfter - s.concurrencyGained << "x -> "
                << s.concurrencyAfter << "x" << std::defaultfloat << "\n";
    } else if (!savings.empty()) {
        out << "\n  single changes that save memory:\n";
        for (const auto& s : savings)
            out << "    " << std::left << std::setw(52) << s.description << std::right << gib(s.bytesSaved)
                << " GiB" << (s.fitsAfter ? "  fits" : "") << "\n";
    }
    for (const auto& w : est.warnings)
        out << "\n  warning: " << w;
    if (!est.warnings.empty())
        out << "\n";
}

int cmdEstimate(const Args& a, std::ostream& out) {
    if (a.positional.size() != 1)
        throw std::invalid_argument("estimate takes one SCENARIO.json");
    const Scenario sc = loadScenarioFile(a.positional[0]);
    const Estimate est = estimate(sc);
    if (a.json) {
        auto j = estimateToJson(sc, est);
        j["max_sequence_length"] = maxSequenceLength(sc);
        j["savings"] = savingsToJson(rankSavings(sc));
        out << jsonText(j, 2) << "\n";
    } else {
        printEstimate(out, sc, est);
    }
    return 0;
}

int cmdParams(const Args& a, std::ostream& out) {
    if (a.hfConfig.has_value() == a.preset.has_value() || !a.positional.empty())
        throw std::invalid_argument("params takes exactly one of --hf-config CONFIG.json or --preset NAME");
    ModelSpec spec;
    if (a.preset) {
        const ModelPreset* p = findModelPreset(*a.preset);
        if (!p)
            throw Error("--preset", "unknown preset '" + *a.preset + "' (see headroom-cli presets)");
        spec = p->spec;
    } else {
        try {
            spec = modelFromHfConfig(parseJsonText(readTextFile(*a.hfConfig, 16u << 20)), "");
        } catch (const Error& e) {
            throw Error(e.where().empty() ? *a.hfConfig : *a.hfConfig + ": " + e.where(), e.why());
        }
    }
    const auto total = spec.totalParameters(), active = spec.activeParameters();
    if (a.json)
        out << jsonText(nlohmann::json{{"parameters", total}, {"active_parameters", active}}) << "\n";
    else
        out << "parameters: " << formatCount(total) << "\nactive per token: " << formatCount(active) << "\n";
    return 0;
}

double numberOption(const std::optional<std::string>& v, const char* name, double lo, double hi);
AttributionRules rulesFor(const Args& a);

int cmdRender(const Args& a, std::ostream& out) {
    if (a.positional.size() != 1 || !a.output)
        throw std::invalid_argument("render takes (SCENARIO.json | TRACE) -o OUT.(png|svg|pdf)");
    int w = 1200, h = 700;
    if (a.size && std::sscanf(a.size->c_str(), "%dx%d", &w, &h) != 2)
        throw std::invalid_argument("--size wants WxH, e.g. 1600x900");
    if (isTraceFile(a.positional[0])) {
        std::string error;
        std::optional<Scenario> sc;
        if (a.scenario)
            sc = loadScenarioFile(*a.scenario);
        TraceDrawing drawing;
        drawing.byCategory = a.byCategory;
        drawing.byAllocation = a.byAllocation;
        drawing.rules = rulesFor(a);
        drawing.scenario = sc ? &*sc : nullptr;
        if (!exportTraceTimeline(loadTrace(a.positional[0]), *a.output, w, h, &error, drawing))
            throw Error("", error);
        out << "wrote " << *a.output << "\n";
        return 0;
    }
    const Scenario sc = loadScenarioFile(a.positional[0]);
    std::string error;
    const double scale = a.scale ? numberOption(a.scale, "--scale", 0.5, 8) : 2;
    if (!exportEstimateChart(sc, estimate(sc), *a.output, w, h, &error, scale))
        throw Error("", error);
    out << "wrote " << *a.output << "\n";
    return 0;
}

// The device with the highest allocated peak: the one a plan for one GPU describes.
std::size_t busiestDevice(const LoadedTrace& t, const std::string& path) {
    if (t.indexes.empty())
        throw Error(path, "the trace has no devices");
    return busiestDevice(t.summary);
}

// The attribution rules: PyTorch's defaults, or a file written from them (`headroom-cli rules`) and edited.
AttributionRules rulesFor(const Args& a) {
    return a.rules ? loadAttributionRulesFile(*a.rules) : AttributionRules::pytorchDefaults();
}

int cmdCalibrate(const Args& a, std::ostream& out) {
    if (a.positional.empty() || a.positional.size() % 2 != 0 || !a.output)
        throw std::invalid_argument(
            "calibrate takes SCENARIO.json TRACE [SCENARIO.json TRACE]... -o OUT.headroom.json");
    std::vector<Scenario> scenarios;
    std::vector<std::shared_ptr<LoadedTrace>> traces;
    std::vector<CalibrationInput> runs;
    for (std::size_t i = 0; i < a.positional.size(); i += 2) {
        scenarios.push_back(loadScenarioFile(a.positional[i]));
        traces.push_back(loadTrace(a.positional[i + 1]));
    }
    for (std::size_t i = 0; i < scenarios.size(); ++i)
        runs.push_back({&scenarios[i], &traces[i]->trace,
                        traces[i]->indexes[busiestDevice(*traces[i], a.positional[2 * i + 1])].get(),
                        a.positional[2 * i + 1]});
    const CalibrationResult r =
        calibrate(runs, rulesFor(a), planWithCodeProfile,
                  a.ownProfile ? FitAgainst::ScenarioProfile : FitAgainst::CodeWhereKnown);
    // OUT is the first scenario with the fitted factors and the runs they came from; every what-if starts
    // from there, and removing "calibration" gives the uncalibrated estimate back.
    nlohmann::json doc = scenarios.front().document;
    nlohmann::json fitted = calibrationToJson(r);
    // The scenario keeps the factors and which runs they came from; the runs' tensor tables are the report's.
    nlohmann::json kept = fitted["runs"];
    for (auto& run : kept) {
        run.erase("tensors_at_loss_peak");
        run.erase("tensors_at_step_peak");
    }
    doc["calibration"] = {{"factors", fitted["factors"]}, {"runs", kept}};
    QSaveFile file(QString::fromStdString(*a.output));
    const QByteArray bytes = QByteArray::fromStdString(jsonText(doc, 2) + "\n");
    if (!file.open(QIODevice::WriteOnly) || file.write(bytes) != bytes.size() || !file.commit())
        throw Error(*a.output, "cannot write: " + file.errorString().toStdString());
    if (a.json) {
        out << jsonText(fitted, 2) << "\n";
        return 0;
    }
    out << "fitted on " << r.runs.size() << " run(s); wrote " << *a.output << "\n";
    const Calibration& c = r.factors;
    const double scratch = std::max(0.0, c.stepScratchBytesPerParameter) + c.optimizerStepBytesPerParameter;
    std::ostringstream tensors;
    tensors << std::fixed << std::setprecision(2) << c.stepScratchLargestTensors;
    std::ostringstream logitCopies, backward;
    logitCopies << std::setprecision(3) << c.heldLogitCopies;
    backward << std::setprecision(3) << c.backwardScratchScores;
    std::ostringstream attention, replayed;
    attention << std::setprecision(3) << c.prefillAttentionLinear;
    replayed << std::showpos << std::fixed << std::setprecision(1) << 100 * c.replayedOverhead << "%";
    auto percentOf = [](double fraction) {
        std::ostringstream o;
        o << std::fixed << std::setprecision(1) << 100 * fraction << "%";
        return o.str();
    };
    // The scores' factor of the other activation dtypes the runs told (an autocast run tells fp32's too).
    std::ostringstream otherDtypes;
    for (const auto& [dtype, factor] : c.quadraticByDtype)
        if (dtype != c.quadraticActivationBytes)
            otherDtypes << std::setprecision(3) << "; x " << factor << " with " << static_cast<int>(dtype)
                        << "-byte ones";
    std::ostringstream logitsFactor;
    logitsFactor << std::setprecision(3) << c.logits;
    // Another width's, read by the operator that made each tensor (Calibration::logitsByDtype).
    for (const auto& [dtype, factor] : c.logitsByDtype)
        if (dtype != c.logitsByDtype.front().first)
            logitsFactor << " with " << static_cast<int>(c.logitsByDtype.front().first)
                         << "-byte activations, x " << factor << " with " << static_cast<int>(dtype)
                         << "-byte ones by the operator that made each";
    out << std::setprecision(3) << "  tensors that grow with tokens      x " << c.linear << "\n"
        << (c.logits >= 0
                ? "  the loss's logits-sized tensors    x " + logitsFactor.str() +
                      " (micro-batch x tokens x vocabulary, measured apart: their share follows the "
                      "vocabulary and the layer count)\n"
                : std::string())
        << "  tensors that grow with tokens^2    x " << c.quadratic
        << (c.quadraticActivationBytes > 0
                ? " (with " + std::to_string(static_cast<int>(c.quadraticActivationBytes)) +
                      "-byte activations" + otherDtypes.str() + ")"
                : std::string())
        << (r.scoresUntold ? ", one factor for both: the runs, of one length, cannot tell the scores from "
                             "what grows with tokens (their tensors have other tensors' sizes there, or none "
                             "was alive where measured); other lengths extrapolate with it (a run at another "
                             "length tells)"
                           : "")
        << (r.scoresByOperator
                ? "; the 2-byte factor read from the fp32 runs by the operator that made each "
                  "score tensor: under autocast those of its fp32 list (exp, softmax) stay at 4 "
                  "bytes, the others take 2"
                : "")
        << "\n"
        << (c.prefillAttentionLinear >= 0
                ? "  inside a layer's attention         x " + attention.str() +
                      " of the layer's activations beside the scores (the forward peaks there or elsewhere, "
                      "whichever holds more)\n"
                : std::string())
        << "  KV cache                           x " << c.kvCache << "\n"
        << "  optimizer step scratch             " << scratch << " bytes per parameter"
        << (c.stepScratchLargestTensors >= 0
                ? " (one parameter at a time: " + tensors.str() +
                      " tensors of the largest parameter, which another model size plans with its own)"
                : std::string())
        << "\n"
        << (c.heldLogitCopies > 0 ? "  logits held through the step       x " + logitCopies.str() +
                                        " (micro-batch x tokens x vocabulary, activation dtype)\n"
                                  : std::string())
        << (r.backwardFromForward
                ? "  attention backward's scratch       x " + backward.str() +
                      " (not measured: the scores have the size of other tensors, or no backward was "
                      "recorded; as many times the plan's " +
                      (c.codeTables ? std::string("") : std::string("two ")) +
                      "as the forward's saved copies)\n"
            : c.backwardScratchScores >= 0 ? "  attention backward's scratch       x " + backward.str() +
                                                 " (the softmax backward's two score-sized gradients)\n"
            : plannedBackwardScoreScratch(scenarios.front()) > 0
                ? "  attention backward's scratch       not measured: at these lengths the scores have the "
                  "size of "
                  "other tensors (the plan's two copies stand; a run at another length tells)\n"
                : std::string())
        << "  workspaces                         " << std::fixed << std::setprecision(1)
        << c.workspaceBytes / 1048576.0 << " MiB\n"
        << (c.allocatorOverhead >= 0
                ? "  reserved beyond the tensors        " + percentOf(c.allocatorOverhead) +
                      " of the allocated peak (what the runs' caching allocator kept cached; in place of the "
                      "plan's " +
                      percentOf(scenarios.front().overheads.allocatorOverheadFraction) + ")\n"
                : std::string())
        << (c.replayedOverheadMeasured()
                ? "  beside the allocator's replay      " + replayed.str() +
                      " of the allocated peak beyond what the replay of the runs' plans reserved (the plan "
                      "replays its own shape and adds this, in place of the share)\n"
                : std::string())
        << (c.code && c.codeTables
                ? "  tables fitted against              " + std::string(nameOf(frameworkNames(), *c.code)) +
                      "'s (the runs' stacks name it: each factor is over that code's tensors, and a plan it "
                      "can run is made with its tables and replays its order, one it cannot with the "
                      "factors fitted against the scenario's own profile, written beside them; --own-profile "
                      "fits the scenario's own alone)\n"
            : c.code
                ? "  code replayed                      " + std::string(nameOf(frameworkNames(), *c.code)) +
                      " (the runs' stacks name it: the plan keeps its calibrated tensors, and what the "
                      "allocator caches beyond them follows this code's order)\n"
                : std::string())
        << (c.code && c.codeOptimizer
                ? "  optimizer replayed                 the code's own (the runs' optimizer allocations "
                  "came from its files; a plan declaring another implementation replays that one)\n"
                : std::string())
        << (c.gradientsHeld ? "  gradients                          held through the forward (the runs kept "
                              "every .grad from an earlier step)\n"
                            : "")
        << "\n";
    for (const CalibrationRun& run : r.runs) {
        auto err = [&](std::int64_t e) {
            std::ostringstream s;
            s << std::showpos << std::fixed << std::setprecision(1)
              << 100.0 * static_cast<double>(e - run.measured) /
                     static_cast<double>(std::max<std::int64_t>(run.measured, 1))
              << "%";
            return s.str();
        };
        out << "  " << run.trace << ": measured " << std::fixed << std::setprecision(3)
            << static_cast<double>(run.measured) / 1073741824.0
            << (run.firstStep ? " GiB (a first step: what a later step would reach)" : " GiB")
            << ", estimate before " << err(run.before) << ", after " << err(run.after) << "\n";
        if (run.reservedMeasured > 0) {
            auto off = [&](std::int64_t e) {
                std::ostringstream s;
                s << std::showpos << std::fixed << std::setprecision(1)
                  << 100.0 * (static_cast<double>(e) / static_cast<double>(run.reservedMeasured) - 1) << "%";
                return s.str();
            };
            out << "    reserved " << std::fixed << std::setprecision(3)
                << static_cast<double>(run.reservedMeasured) / 1073741824.0 << " GiB, estimate before "
                << off(run.reservedBefore) << ", after " << off(run.reservedAfter) << "\n";
        }
        if (!run.advice.empty())
            out << "    " << run.advice << "\n";
        if (!run.mismatch.empty())
            out << "    warning: " << run.mismatch << "\n";
        if (run.noBackward)
            out << "    no backward recorded (no gradient, no step): a forward with autograd on? Plan it as "
                   "inference with grad_mode \"enabled\" and calibrate that; its factors serve training "
                   "plans too\n";
    }
    // What each run held at its loss peak, tensor by tensor: the shapes calibration scales, and what no
    // shape of the model explains (the whole table, and the step's, in --json).
    for (const CalibrationRun& run : r.runs) {
        const TensorTable& t = run.atLoss;
        auto mib = [](std::int64_t b) {
            std::ostringstream s;
            s << std::fixed << std::setprecision(1) << static_cast<double>(b) / 1048576.0 << " MiB";
            return s.str();
        };
        out << "\n  " << run.trace << " at its loss peak, " << mib(t.total) << ": model state "
            << mib(t.modelState) << ", workspaces " << mib(t.workspaces)
            << (t.kvCache ? ", KV cache " + mib(t.kvCache) : "") << "; the rest by shape\n";
        const std::size_t shown = std::min<std::size_t>(t.rows.size(), 8);
        for (std::size_t i = 0; i < shown; ++i) {
            const TensorRow& row = t.rows[i];
            out << "    " << std::setw(5) << row.count << " x " << std::setw(10) << mib(row.each) << "  "
                << row.shape << (row.dtypeBytes ? ", " + std::to_string(row.dtypeBytes) + "-byte" : "")
                << "\n";
        }
        if (t.rows.size() > shown) {
            std::int64_t rest = 0;
            for (std::size_t i = shown; i < t.rows.size(); ++i)
                rest = saturatingAdd(rest, t.rows[i].bytes());
            out << "    and " << t.rows.size() - shown << " smaller shapes, " << mib(rest) << "\n";
        }
        out << "    residual (no shape of the model): " << mib(t.residual) << " in " << t.residualAllocations
            << " allocations\n";
        if (!run.scoreOperators.empty()) {
            out << "    the scores' tensors by the operator that made them:";
            for (std::size_t i = 0; i < run.scoreOperators.size(); ++i)
                out << (i ? ", " : " ") << run.scoreOperators[i].first << " " << run.scoreOperators[i].second;
            out << "\n";
        }
    }
    return 0;
}

int cmdRules(const Args& a, std::ostream& out) {
    if (!a.positional.empty())
        throw std::invalid_argument("rules takes no arguments");
    out << jsonText(attributionRulesToJson(rulesFor(a)), 2) << "\n";
    return 0;
}

// A log of what the driver saw in use (nvidia-smi), which records no allocated bytes: the plan's categories
// beside nothing, and its peak on the GPU against the most used.
int compareUsed(const Comparison& c, const Scenario& sc, const std::string& trace, std::ostream& out) {
    auto gib = [](double b) {
        std::ostringstream s;
        s << std::fixed << std::setprecision(2) << b / 1073741824.0;
        return s.str();
    };
    out << sc.name << " vs " << trace << " (device " << c.device
        << "; it records the memory in use, not what PyTorch allocated)\n\n";
    out << "  " << std::left << std::setw(20) << "GiB" << std::right << std::setw(10) << "estimate"
        << std::setw(10) << "measured" << std::setw(10) << "diff"
        << "\n";
    for (std::size_t i = 0; i < kMeasuredCategories; ++i)
        if (c.estimated[i] != 0)
            out << "  " << std::left << std::setw(20)
                << measuredCategoryLabel(static_cast<MeasuredCategory>(i)) << std::right << std::setw(10)
                << gib(static_cast<double>(c.estimated[i])) << std::setw(10) << "-"
                << "\n";
    out << "  " << std::left << std::setw(20) << "Allocated" << std::right << std::setw(10)
        << gib(static_cast<double>(c.estimatedTotal)) << std::setw(10) << "-"
        << "\n";
    out << "  " << std::left << std::setw(20) << "In use on the GPU" << std::right << std::setw(10)
        << gib(c.usedEstimated) << std::setw(10) << gib(static_cast<double>(c.usedMeasured)) << std::setw(10)
        << gib(c.usedEstimated - static_cast<double>(c.usedMeasured)) << "   " << std::showpos << std::fixed
        << std::setprecision(1) << 100 * c.usedError() << "%" << std::noshowpos << "\n\n";
    out << "  the plan's peak on the GPU (what PyTorch reserves, the CUDA context and memory outside it) is "
        << std::fixed << std::setprecision(1) << std::abs(100 * c.usedError()) << "% "
        << (c.usedError() < 0 ? "below" : "above") << " the most the log saw in use; it records no allocated "
        << "bytes, so the categories cannot be compared (a memory snapshot of the run can)\n";
    return 0;
}

int cmdCompare(const Args& a, std::ostream& out) {
    if (a.positional.size() != 2)
        throw std::invalid_argument("compare takes SCENARIO.json TRACE");
    const Scenario sc = loadScenarioFile(a.positional[0]);
    const Estimate est = estimate(sc);
    const auto loaded = loadTrace(a.positional[1]);
    const std::size_t device = busiestDevice(*loaded, a.positional[1]);
    Comparison c = compareAtPeak(sc, est, loaded->trace, *loaded->indexes[device], rulesFor(a));
    planWithCodeProfile(c, sc); // the code's own profile beside it, when the stacks name another
    if (a.json) {
        out << jsonText(comparisonToJson(c, a.positional[1]), 2) << "\n";
        return 0;
    }
    auto gib = [](std::int64_t b) {
        std::ostringstream s;
        s << std::fixed << std::setprecision(2) << static_cast<double>(b) / 1073741824.0;
        return s.str();
    };
    if (!c.allocatedRecorded)
        return compareUsed(c, sc, a.positional[1], out);
    out << sc.name << " vs " << a.positional[1] << " (device " << c.device << ", peak after event "
        << c.measured.event << ")\n\n";
    out << "  " << std::left << std::setw(20) << "GiB" << std::right << std::setw(10) << "estimate"
        << std::setw(10) << "measured" << std::setw(10) << "diff"
        << "\n";
    for (std::size_t i = 0; i < kMeasuredCategories; ++i) {
        const std::int64_t e = c.estimated[i], m = c.measured.bytes[i];
        if (e == 0 && m == 0)
            continue;
        out << "  " << std::left << std::setw(20) << measuredCategoryLabel(static_cast<MeasuredCategory>(i))
            << std::right << std::setw(10) << gib(e) << std::setw(10) << gib(m) << std::setw(10) << gib(e - m)
            << "\n";
    }
    out << "  " << std::left << std::setw(20) << "Allocated" << std::right << std::setw(10)
        << gib(c.estimatedTotal) << std::setw(10) << gib(c.measured.total) << std::setw(10)
        << gib(c.difference()) << "\n";
    // What the allocator reserved at its most beside it: what runs out first.
    if (c.reservedMeasured > 0) {
        const auto reserved = static_cast<std::int64_t>(std::llround(c.reservedEstimated));
        out << "  " << std::left << std::setw(20) << "Reserved" << std::right << std::setw(10)
            << gib(reserved) << std::setw(10) << gib(c.reservedMeasured) << std::setw(10)
            << gib(saturatingSub(reserved, c.reservedMeasured)) << "   " << std::showpos << std::fixed
            << std::setprecision(1) << 100 * c.reservedError() << "%" << std::noshowpos << "\n";
    }
    out << "\n";
    out << "  the estimate is " << std::fixed << std::setprecision(1) << std::abs(c.relativeError()) * 100
        << "% " << (c.difference() < 0 ? "below" : "above") << " the measured peak";
    if (const std::string named = namedDifferences(c); !named.empty())
        out << " (" << named << ")";
    const std::int64_t unattributed = c.measured.of(MeasuredCategory::Unattributed);
    if (unattributed > 0)
        out << "; " << std::setprecision(2) << static_cast<double>(unattributed) / 1048576.0
            << " MiB of what it measured no rule could place (unattributed)";
    out << "\n";
    if (!c.eventsRecorded)
        out << "  this snapshot records no allocation events: what it measured is the memory when it was "
               "taken, "
               "which need not be the run's peak (torch.cuda.memory._record_memory_history() before the step "
               "records the run)\n";
    if (c.firstStep)
        out << "  this trace records a first step: its " << gib(c.createdStates)
            << " GiB of optimizer states were created by the step, after the forward and backward; a later\n"
            << "  step, with them alive throughout as the plan has them, would reach about "
            << gib(c.laterStepPeak) << " GiB before its step: the estimate is " << std::setprecision(1)
            << std::abs(c.laterStepError()) * 100 << "% " << (c.laterStepError() < 0 ? "below" : "above")
            << " that (training.first_step: true plans the first step itself)\n";
    if (const std::string advice = c.advice(); !advice.empty())
        out << "  " << advice << "\n";
    return 0;
}

int cmdDiff(const Args& a, std::ostream& out) {
    if (a.positional.size() != 2)
        throw std::invalid_argument("diff takes TRACE_A TRACE_B");
    const auto ta = loadTrace(a.positional[0]), tb = loadTrace(a.positional[1]);
    // A scenario of the workload lets sizes tell model state from scratch in both runs.
    std::optional<Scenario> sc;
    if (a.scenario)
        sc = loadScenarioFile(*a.scenario);
    const TraceDiff d =
        diffAtPeaks(ta->trace, *ta->indexes[busiestDevice(*ta, a.positional[0])], tb->trace,
                    *tb->indexes[busiestDevice(*tb, a.positional[1])], rulesFor(a), sc ? &*sc : nullptr);
    if (a.json) {
        out << jsonText(traceDiffToJson(d, a.positional[0], a.positional[1]), 2) << "\n";
        return 0;
    }
    auto mib = [](std::int64_t b) {
        std::ostringstream s;
        s << std::fixed << std::setprecision(1) << static_cast<double>(b) / 1048576.0;
        return s.str();
    };
    if (!d.allocatedRecorded) {
        // An nvidia-smi log records the memory in use alone: the runs compared by it.
        out << "A " << a.positional[0] << ": at most " << mib(d.reservedA) << " MiB reserved\n";
        out << "B " << a.positional[1] << ": at most " << mib(d.reservedB) << " MiB reserved\n";
        out << "B - A: " << mib(d.reservedDifference()) << " MiB reserved\n\n";
        out << "no allocated bytes to compare: an nvidia-smi log records the memory in use (read as "
               "reserved, the CUDA context included), not "
               "what PyTorch allocated; snapshots of the runs (torch.cuda.memory._record_memory_history) "
               "split it by category and frame\n";
        return 0;
    }
    out << "A " << a.positional[0] << ": peak " << mib(d.a.total) << " MiB after event " << d.a.event << "\n";
    out << "B " << a.positional[1] << ": peak " << mib(d.b.total) << " MiB after event " << d.b.event << "\n";
    out << "B - A: " << mib(d.difference()) << " MiB\n\n";
    out << "  " << std::left << std::setw(20) << "MiB" << std::right << std::setw(12) << "A" << std::setw(12)
        << "B" << std::setw(12) << "B - A"
        << "\n";
    for (std::size_t i = 0; i < kMeasuredCategories; ++i) {
        if (d.a.bytes[i] == 0 && d.b.bytes[i] == 0)
            continue;
        out << "  " << std::left << std::setw(20) << measuredCategoryLabel(static_cast<MeasuredCategory>(i))
            << std::right << std::setw(12) << mib(d.a.bytes[i]) << std::setw(12) << mib(d.b.bytes[i])
            << std::setw(12) << mib(d.b.bytes[i] - d.a.bytes[i]) << "\n";
    }
    auto list = [&](const char* title, const std::vector<FrameDelta>& rows) {
        out << "\n" << title << "\n";
        for (std::size_t i = 0; i < rows.size() && i < 15; ++i)
            out << "  " << std::right << std::setw(10) << mib(rows[i].difference()) << " MiB  (A "
                << rows[i].countA << ", B " << rows[i].countB << ")  " << rows[i].frame << "\n";
    };
    list("largest changes by top user frame (MiB, B - A; allocation counts):", d.byFrame);
    list("allocations in only one run, matched by size and frame (MiB, B - A):", d.unmatched);
    return 0;
}

int cmdTimeline(const Args& a, std::ostream& out) {
    if (a.positional.size() != 1)
        throw std::invalid_argument("timeline takes one TRACE file");
    const std::string& path = a.positional[0];
    const int buckets =
        a.buckets ? static_cast<int>(numberOption(a.buckets, "--buckets", 1, 100000)) : (a.json ? 100 : 24);
    std::optional<Scenario> sc;
    if (a.scenario)
        sc = loadScenarioFile(*a.scenario);
    const auto loaded = loadTrace(path);
    std::size_t device = busiestDevice(*loaded, path);
    if (a.device) {
        std::string keys;
        device = loaded->trace.devices.size();
        for (std::size_t d = 0; d < loaded->trace.devices.size(); ++d) {
            keys += (d ? ", " : "") + loaded->trace.devices[d].key;
            if (loaded->trace.devices[d].key == *a.device)
                device = d;
        }
        if (device == loaded->trace.devices.size())
            throw Error(path, "no device '" + *a.device + "' (its devices: " + keys + ")");
    }
    const RunTimeline run =
        runTimeline(loaded->trace, *loaded->indexes[device], rulesFor(a), sc ? &*sc : nullptr, buckets);
    if (a.json) {
        out << jsonText(runTimelineToJson(run, path), 2) << "\n";
        return 0;
    }
    // The categories any bucket holds, as columns after the totals.
    std::vector<std::size_t> shown;
    for (std::size_t k = 0; k < kMeasuredCategories && run.byCategory; ++k)
        for (const TimelineBucket& b : run.buckets)
            if (b.bytes[k] != 0 || b.bytesAtMax[k] != 0) {
                shown.push_back(k);
                break;
            }
    out << path << ", device " << run.device << ": " << run.buckets.size() << " stretches of "
        << (run.timeAxis ? "time" : "events")
        << (!run.allocatedRecorded ? "; GiB at each stretch's reserved maximum (allocated is not recorded: "
                                     "the memory in use, read as reserved)"
            : run.byCategory       ? "; GiB at each stretch's allocated maximum"
                                   : "; GiB at each stretch's allocated maximum (this format records totals, "
                                     "not allocations: no categories)")
        << "\n\n";
    auto cell = [](std::int64_t b, int width) {
        std::ostringstream s;
        s << std::fixed << std::setprecision(2) << std::setw(width) << static_cast<double>(b) / 1073741824.0;
        return s.str();
    };
    const double origin = run.origin;
    if (run.hasPlan)
        out << "plan: the scenario's step placed on the run by "
            << (run.plan.alignment == "optimizer step"
                    ? "its Optimizer.step region and allocated peak"
                    : "its allocated peak alone (no Optimizer.step region)")
            << ", read at the same moments\n\n";
    out << std::setw(12) << (run.timeAxis ? "from (s)" : "from event") << std::setw(10) << "allocated"
        << std::setw(10) << "reserved";
    if (run.hasPlan)
        out << std::setw(10) << "plan";
    for (std::size_t k : shown) {
        const std::string key = measuredCategoryKey(static_cast<MeasuredCategory>(k));
        out << std::setw(13) << (key == "optimizer_states" ? "opt_states" : key);
    }
    out << "\n";
    for (const TimelineBucket& b : run.buckets) {
        std::ostringstream from;
        if (run.timeAxis)
            from << std::fixed << std::setprecision(4) << (b.start - origin) * run.secondsPerUnit;
        else
            from << static_cast<long long>(b.start);
        out << std::setw(12) << from.str()
            << (run.allocatedRecorded ? cell(b.allocatedMax, 10) : std::string(10 - 1, ' ') + "-")
            << cell(b.reservedMax, 10);
        if (run.hasPlan) {
            std::array<std::int64_t, kMeasuredCategories> plan{};
            std::int64_t planned = 0;
            if (run.plan.at(static_cast<double>(b.maxEvent), &plan))
                for (std::int64_t v : plan)
                    planned += v;
            out << (planned > 0 ? cell(planned, 10) : std::string(10 - 1, ' ') + "-");
        }
        for (std::size_t k : shown)
            out << cell(b.bytesAtMax[k], 13);
        out << (b.maxEvent == run.peakEvent ? "   <- peak" : "") << "\n";
    }
    if (!run.regions.empty()) {
        // The regions whose peak rose most over where they started (ties: the first), ten at most.
        std::vector<const RegionMemory*> order;
        for (const RegionMemory& r : run.regions)
            order.push_back(&r);
        std::stable_sort(order.begin(), order.end(), [](const RegionMemory* x, const RegionMemory* y) {
            return x->peakOverStart() > y->peakOverStart();
        });
        out << "\nannotated regions (" << run.regions.size()
            << "), the largest rise first; GiB: peak, rise over its start, allocated inside, still live at "
               "its end\n";
        for (std::size_t i = 0; i < order.size() && i < 10; ++i) {
            const RegionMemory& r = *order[i];
            std::ostringstream at;
            at << std::fixed << std::setprecision(4)
               << (static_cast<double>(r.start) - origin) * run.secondsPerUnit;
            out << std::setw(12) << at.str() << cell(r.peakAllocated, 10) << cell(r.peakOverStart(), 10)
                << cell(r.allocatedBytes, 10) << cell(r.stillLiveBytes, 10) << "  " << r.name << "\n";
        }
    }
    return 0;
}

int cmdTraceSummary(const Args& a, std::ostream& out) {
    if (a.positional.size() != 1)
        throw std::invalid_argument("trace-summary takes one TRACE file");
    const TraceSummary summary = summarize(readTraceFile(a.positional[0]));
    if (a.json) {
        out << jsonText(traceSummaryToJson(summary), 2) << "\n";
        return 0;
    }
    out << a.positional[0] << ": " << traceFormatName(summary.format) << "\n";
    for (const auto& d : summary.devices) {
        out << "  device " << d.key << ": " << formatCount(d.entries) << " entries";
        if (d.segments)
            out << ", " << d.segments << " segments";
        // nvidia-smi logs record the device's used memory alone (the JSON keeps its zeros, by contract).
        if (d.allocatedRecorded)
            out << "\n    allocated  peak " << formatBytes(static_cast<double>(d.peakAllocated)) << ", final "
                << formatBytes(static_cast<double>(d.finalAllocated)) << "\n    active     peak "
                << formatBytes(static_cast<double>(d.peakActive)) << ", final "
                << formatBytes(static_cast<double>(d.finalActive));
        else
            out << "\n    allocated  not recorded (the file has the device's used memory, read as reserved)";
        out << "\n    reserved   peak " << formatBytes(static_cast<double>(d.peakReserved)) << ", final "
            << formatBytes(static_cast<double>(d.finalReserved)) << "\n    actions   ";
        for (const auto& [name, count] : d.actions)
            out << " " << name << " " << count;
        out << "\n";
    }
    return 0;
}

int cmdFleet(const Args& a, std::ostream& out, std::ostream& err) {
    if (a.positional.empty())
        throw std::invalid_argument("fleet takes a DIR or rank FILES");
    const std::vector<std::string> files = fleetFiles(a.positional);
    if (files.empty())
        throw Error(a.positional[0], "no rank files in it");
    FleetOptions options;
    if (a.layout) {
        try {
            options.layout = parseFleetLayout(*a.layout);
        } catch (const Error& e) { // a usage error: exit 2
            throw std::invalid_argument(e.what());
        }
    }
    std::optional<Scenario> sc;
    if (a.scenario) {
        sc = loadScenarioFile(*a.scenario);
        options.scenario = &*sc;
    }
    options.rules = rulesFor(a);
    const Fleet fleet = readFleetFiles(files, options);
    if (a.json) {
        out << jsonText(fleetToJson(fleet), 2) << "\n";
        return fleet.job.readErrors == static_cast<int>(fleet.ranks.size()) ? 1 : 0;
    }
    auto gib = [](std::int64_t b) { return formatBytes(static_cast<double>(b)); };
    const FleetJob& j = fleet.job;
    // Compared by reserved (nvidia-smi logs), "at peak" is reserved's peak, as the summary line says.
    out << "rank stage     peak allocated   reserved  at peak  frag  OOMs  file\n";
    for (const FleetRank& r : fleet.ranks) {
        char line[160];
        if (!r.error.empty()) {
            out << std::setw(4) << r.rank << "  " << r.error << "\n";
            continue;
        }
        const auto frag = r.fragmentationAtPeak();
        std::snprintf(line, sizeof line, "%4d %5s %18s %10s %+7.2fs %5s %5llu  ", r.rank,
                      r.stage >= 0 ? std::to_string(r.stage).c_str() : "-",
                      r.summary.allocatedRecorded ? gib(r.summary.peakAllocated).c_str() : "not recorded",
                      gib(r.summary.peakReserved).c_str(), static_cast<double>(r.peakTimeUs()) / 1e6,
                      frag ? (std::to_string(std::lround(100 * *frag)) + "%").c_str() : "-",
                      static_cast<unsigned long long>(r.summary.ooms()));
        out << line << r.file << (r.outlier ? "  <- outlier: " + r.outlierWhy : "") << "\n";
    }
    out << fleet.ranks.size() << " ranks";
    if (j.readErrors)
        out << ", " << j.readErrors << " unreadable";
    if (j.worstRank >= 0)
        out << (j.byReserved ? "; by reserved (allocated not recorded)" : "") << "; worst rank "
            << j.worstRank << "; median " << gib(j.medianPeak) << ", MAD " << gib(j.madBytes) << ", spread "
            << gib(j.spreadBytes);
    out << "\n";
    if (j.outliers.empty())
        out << "no outliers (none above the median + 3 MADs, no OOM)\n";
    for (const FleetRank& r : fleet.ranks)
        if (r.outlier)
            out << "outlier: rank " << r.rank << ": " << r.outlierWhy << "\n";
    for (const FleetStage& st : j.stages) {
        out << "stage " << st.stage << ": " << st.ranks << " ranks, max " << gib(st.maxPeak) << " (rank "
            << st.worstRank << "), median " << gib(st.medianPeak);
        if (st.estimateBytes)
            out << "; the plan " << gib(*st.estimateBytes);
        out << "\n";
    }
    for (const std::string& w : fleet.warnings)
        err << "warning: " << w << "\n";
    return j.readErrors == static_cast<int>(fleet.ranks.size()) ? 1 : 0;
}

double numberOption(const std::optional<std::string>& v, const char* name, double lo, double hi) {
    double d = 0;
    std::size_t used = 0;
    try {
        d = std::stod(*v, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != v->size() || !(d >= lo && d <= hi))
        throw std::invalid_argument(std::string(name) + " needs a number from " + std::to_string(lo) +
                                    " to " + std::to_string(hi) + ", got '" + *v + "'");
    return d;
}

int cmdAllocatorWhatIf(const Args& a, std::ostream& out) {
    if (a.positional.size() != 1)
        throw std::invalid_argument("allocator-whatif takes one TRACE (a PyTorch memory snapshot)");
    const Trace trace = readTraceFile(a.positional[0]);
    // The what-if starts from the recorded settings and changes what the options name.
    AllocatorSettings s = settingsFromRecording(trace.allocatorSettings);
    if (a.expandableSegments)
        s.expandableSegments = true;
    if (a.maxSplitSizeMb)
        s.maxSplitSize =
            static_cast<std::uint64_t>(numberOption(a.maxSplitSizeMb, "--max-split-size-mb", 20, 1 << 24)) *
            1048576ull;
    if (a.roundupDivisions) {
        const double d = numberOption(a.roundupDivisions, "--roundup-power2-divisions", 1, 1 << 16);
        if (d != std::floor(d) || (static_cast<int>(d) & (static_cast<int>(d) - 1)) != 0)
            throw std::invalid_argument("--roundup-power2-divisions must be a power of two");
        std::fill(s.roundupPower2Divisions.begin(), s.roundupPower2Divisions.end(), static_cast<int>(d));
    }
    if (a.gcThreshold)
        s.garbageCollectionThreshold = numberOption(a.gcThreshold, "--garbage-collection-threshold", 0, 1);
    if (a.memoryFraction)
        s.memoryFraction = numberOption(a.memoryFraction, "--memory-fraction", 0, 1);
    if (a.deviceMemoryGib)
        s.deviceMemory = static_cast<std::uint64_t>(std::llround(
            numberOption(a.deviceMemoryGib, "--device-memory-gib", 0.001, 1 << 20) * 1073741824.0));
    if (s.garbageCollectionThreshold > 0 && (s.memoryFraction <= 0 || s.deviceMemory == 0))
        throw std::invalid_argument("--garbage-collection-threshold acts only with --memory-fraction and "
                                    "--device-memory-gib (PyTorch collects only under a memory fraction)");
    std::vector<DeviceWhatIf> devices;
    try {
        devices = allocatorWhatIf(trace, s);
    } catch (const Error& e) { // a trace it cannot replay: named by its file, as every reader's errors are
        throw Error(a.positional[0], e.where() + ": " + e.why());
    }
    if (a.json) {
        out << jsonText(allocatorWhatIfToJson(devices, s), 2) << "\n";
        return 0;
    }
    auto b = [](std::uint64_t v) { return formatBytes(static_cast<double>(v)); };
    out << a.positional[0] << "\n";
    for (const DeviceWhatIf& w : devices) {
        out << "  device " << w.device << "\n";
        out << "    recorded   peak reserved " << b(w.recorded.peakReserved) << ", "
            << w.recorded.segmentAllocs << " segment allocs, " << w.recorded.segmentFrees << " frees"
            << (w.recorded.hasSegmentEvents ? "" : " (the trace records no segment events)") << "\n";
        out << "    replayed   peak reserved " << b(w.replayed.peakReserved) << ", "
            << w.replayed.segmentAllocs << " segment allocs, " << w.replayed.segmentFrees << " frees; "
            << (w.replayed.matchesRecording ? "reproduces every recorded segment event"
                                            : "differs at " + w.replayed.firstDifference)
            << "; " << formatCount(w.replayed.addressMatches) << " of " << formatCount(w.replayed.allocations)
            << " blocks at their recorded addresses\n";
        const std::uint64_t frag =
            w.whatif.peakReserved - std::min(w.whatif.peakReserved, w.whatif.allocatedAtPeak);
        const std::uint64_t fragBefore =
            w.baseline.peakReserved - std::min(w.baseline.peakReserved, w.baseline.allocatedAtPeak);
        if (w.replayed.startReserved > 0)
            out << "    the trace starts with " << b(w.replayed.startReserved)
                << " reserved; what-ifs start from its live blocks alone, where the recorded settings reach "
                << b(w.baseline.peakReserved) << "\n";
        out << "    what-if    peak reserved " << b(w.whatif.peakReserved);
        if (w.bandLow != w.bandHigh)
            out << " (" << b(w.bandLow) << " to " << b(w.bandHigh) << " over address orders)";
        out << ", " << w.whatif.segmentAllocs << " segment allocs/maps, " << w.whatif.ooms
            << " OOMs (recorded settings " << w.baseline.ooms << ")\n";
        out << "    fragmentation at the peak (reserved - allocated): " << b(fragBefore) << " -> " << b(frag)
            << "\n";
    }
    out << "  caveats: code that adapts to free memory, and memory outside the allocator (CUDA context, "
           "NCCL,\n"
           "  cuBLAS workspaces), are not replayed; OOMs are predicted only with --device-memory-gib.\n";
    return 0;
}

int cmdReport(const Args& a, std::ostream& out) {
    if (a.positional.empty() || a.positional.size() > 2 || !a.output)
        throw std::invalid_argument("report takes SCENARIO.json [TRACE] -o OUT.(pdf|md)");
    const Scenario sc = loadScenarioFile(a.positional[0]);
    const Estimate est = estimate(sc);
    std::optional<Comparison> measured;
    std::optional<ReportRunChart> run;
    std::vector<TimelineLane> lanes; // the compared device by category, the plan over it
    TraceDrawing drawing;
    drawing.byCategory = true;
    drawing.rules = rulesFor(a);
    drawing.scenario = &sc;
    if (a.positional.size() == 2) {
        const auto loaded = loadTrace(a.positional[1]);
        const std::size_t device = busiestDevice(*loaded, a.positional[1]);
        measured = compareAtPeak(sc, est, loaded->trace, *loaded->indexes[device], drawing.rules);
        planWithCodeProfile(*measured, sc);
        lanes = drawnLanes(loaded, drawing, device);
        for (TimelineLane& lane : lanes) // the report names the trace already: the lane, its device
            lane.label =
                QStringLiteral("device %1").arg(QString::fromStdString(loaded->trace.devices[device].key));
        if (!lanes.empty())
            run = ReportRunChart{
                QStringLiteral("The run over time by category, the plan dashed over it (device %1)")
                    .arg(QString::fromStdString(loaded->trace.devices[device].key)),
                [&lanes](QPainter& p, const QRectF& r) {
                    TimelineRenderer::paint(p, r.toRect(), lanes, wholeRunView(lanes, true), ChartStyle{});
                }};
    }
    std::string error;
    if (!writeReport(sc, est, measured ? &*measured : nullptr, *a.output, &error, run ? &*run : nullptr))
        throw Error("", error);
    out << "wrote " << *a.output << "\n";
    return 0;
}

int cmdValidate(const Args& a, std::ostream& out, std::ostream& err) {
    if (a.positional.empty())
        throw std::invalid_argument("validate takes one or more CASES.json files");
    std::vector<ValidationCases> files;
    for (const std::string& path : a.positional)
        files.push_back(loadValidationCases(path));
    const Validation v = runValidation(std::move(files), rulesFor(a));
    // The scenario readers' warnings go to stderr: the tables on stdout are what the README quotes.
    for (const CaseResult& r : v.results)
        for (const std::string& w : r.warnings)
            err << "warning: " << w << "\n";
    out << (a.json ? jsonText(validationToJson(v), 2) : validationMarkdown(v, !a.summary)) << "\n";
    return 0;
}

int cmdServingLogs(const Args& a, std::ostream& out) {
    if (a.positional.size() != 1)
        throw std::invalid_argument("serving-logs takes one CASES.json file");
    const ServingCases cases = loadServingCases(a.positional[0]);
    const std::vector<ServingCaseResult> results = runServingCases(cases);
    out << (a.json ? jsonText(servingCasesToJson(results), 2) : servingCasesMarkdown(results)) << "\n";
    return 0;
}

int cmdPresets(const Args& a, std::ostream& out) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& p : modelPresets()) {
        if (a.json)
            j.push_back({{"name", p.name},
                         {"model_type", p.spec.modelType},
                         {"parameters", p.spec.totalParameters()}});
        else
            out << std::left << std::setw(40) << p.name << std::right << std::setw(20)
                << formatCount(p.spec.totalParameters()) << "\n";
    }
    if (a.json)
        out << jsonText(j, 2) << "\n";
    return 0;
}

int cmdGpus(const Args& a, std::ostream& out) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& g : gpuCatalogue()) {
        if (a.json)
            j.push_back({{"name", g.name},
                         {"memory_bytes", g.memoryBytes},
                         {"pcie_gb_per_s", g.pcieGBps},
                         {"compute_capability", g.computeCapability}});
        else
            out << std::left << std::setw(20) << g.name << std::right
                << formatBytes(static_cast<double>(g.memoryBytes)) << "   compute capability " << std::fixed
                << std::setprecision(1) << g.computeCapability << std::defaultfloat << "\n";
    }
    if (a.json)
        out << jsonText(j, 2) << "\n";
    return 0;
}

} // namespace

int runCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
    if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
        (args.empty() ? err : out) << kUsage;
        return args.empty() ? 2 : 0;
    }
    if (args[0] == "--version" || args[0] == "version") {
        out << "headroom-cli " << version() << "\n"
            << "licence: " << kLicence << " (no warranty); notices: /usr/share/doc/headroom/copyright\n";
        for (const Dependency& d : kDependencies)
            out << "  " << d.name << " (" << d.licence << "): " << d.why << "\n";
        return 0;
    }
    const std::string& cmd = args[0];
    try {
        const Args a = parseArgs(args, 1);
        if (cmd == "estimate")
            return cmdEstimate(a, out);
        if (cmd == "params")
            return cmdParams(a, out);
        if (cmd == "calibrate")
            return cmdCalibrate(a, out);
        if (cmd == "rules")
            return cmdRules(a, out);
        if (cmd == "diff")
            return cmdDiff(a, out);
        if (cmd == "compare")
            return cmdCompare(a, out);
        if (cmd == "trace-summary")
            return cmdTraceSummary(a, out);
        if (cmd == "fleet")
            return cmdFleet(a, out, err);
        if (cmd == "allocator-whatif")
            return cmdAllocatorWhatIf(a, out);
        if (cmd == "timeline")
            return cmdTimeline(a, out);
        if (cmd == "render")
            return cmdRender(a, out);
        if (cmd == "report")
            return cmdReport(a, out);
        if (cmd == "validate")
            return cmdValidate(a, out, err);
        if (cmd == "serving-logs")
            return cmdServingLogs(a, out);
        if (cmd == "presets")
            return cmdPresets(a, out);
        if (cmd == "gpus")
            return cmdGpus(a, out);
        err << "error: unknown command '" << cmd << "'\n" << kUsage;
        return 2;
    } catch (const std::invalid_argument& e) {
        err << "error: " << e.what() << "\n" << kUsage;
        return 2;
    } catch (const Error& e) {
        err << "error: " << e.what() << "\n";
        return 1;
    } catch (const std::exception& e) {
        err << "error: " << e.what() << "\n";
        return 1;
    }
}

} // namespace headroom
