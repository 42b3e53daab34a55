// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/trace/formats/tracereader.h"

#include "core/checkednumbers.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/trace/formats/datatree.h"
#include "core/trace/formats/gzip.h"
#include "core/trace/formats/jsontree.h"
#include "core/trace/formats/nvidiasmi.h"
#include "core/trace/formats/treereaders.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <streambuf>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <unordered_map>

namespace headroom {

namespace {

using Value = DataTree::Value;

bool looksLikeJson(std::string_view s) {
    for (char c : s) {
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
            continue;
        return c == '{' || c == '[';
    }
    return false;
}

Trace fromJsonTree(DataTree& t, Value root) {
    if (t.isDict(root)) {
        bool found = false;
        t.get(root, "traceEvents", &found);
        if (found)
            return chromeTraceFromTree(t, root);
        t.get(root, "segments", &found);
        if (found)
            return snapshotFromTree(t, root, TraceFormat::PytorchSnapshotJson);
        throw Error(
            "",
            "a JSON object that is neither a profiler trace (traceEvents) nor a memory snapshot (segments)");
    }
    if (!t.isList(root))
        throw Error("", "unrecognised JSON document");
    const Value first = t.at(root, 0);
    if (t.size(root) == 0)
        throw Error("", "an empty JSON list: nothing to read");
    if (t.size(root) == 2 && t.isList(first) && t.isList(t.at(root, 1)) &&
        (t.size(first) == 0 || !t.isList(t.at(first, 0))))
        return memoryTimelineFromTree(t, root);
    if (t.isList(first) && t.size(first) >= 3)
        return memoryTimelineRawFromTree(t, root);
    if (t.isDict(first)) {
        bool blocks = false, ph = false;
        t.get(first, "blocks", &blocks);
        t.get(first, "ph", &ph);
        if (blocks)
            return snapshotFromTree(t, root, TraceFormat::PytorchSnapshotJson);
        if (ph)
            return chromeTraceFromTree(t, root);
    }
    throw Error("", "a JSON list of a kind Headroom does not know");
}

} // namespace

namespace {

// Feeds a pickle machine from an open file with read(): the machine keeps a small window, so the file is
// never resident as a whole (a mapping of it counted in full in peak memory) and progress is real.
class FilePickleSource : public PickleSource {
public:
    FilePickleSource(int fd, std::size_t size) : m_fd(fd), m_size(size) {}
    std::size_t read(char* out, std::size_t max) override {
        while (true) {
            const ssize_t got = ::read(m_fd, out, max);
            if (got >= 0) {
                m_consumed += static_cast<std::size_t>(got);
                return static_cast<std::size_t>(got);
            }
            if (errno != EINTR)
                throw Error("byte " + std::to_string(m_consumed),
                            std::string("cannot read: ") + std::strerror(errno));
        }
    }
    std::size_t consumed() const override { return m_consumed; }
    std::size_t total() const override { return m_size; }
    const char* offsetName() const override { return "byte "; }

private:
    int m_fd;
    std::size_t m_size, m_consumed = 0;
};

// Feeds the JSON parser from a gzip stream, reporting progress (and honouring cancellation) per chunk.
class GzipStreamBuf : public std::streambuf {
public:
    GzipStreamBuf(GzipReader& gz, const ReadProgress& progress) : m_gz(gz), m_progress(progress) {}
    // The decoded offset of the next byte the parser will take.
    std::size_t position() const { return m_gz.produced() - static_cast<std::size_t>(egptr() - gptr()); }

protected:
    int_type underflow() override {
        if (m_progress && !m_progress(m_gz.consumed(), m_gz.total()))
            throw Error("decompressed byte " + std::to_string(m_gz.produced()), "cancelled");
        const std::size_t got = m_gz.read(m_buffer, sizeof m_buffer);
        if (got == 0)
            return traits_type::eof();
        setg(m_buffer, m_buffer, m_buffer + got);
        return traits_type::to_int_type(m_buffer[0]);
    }

private:
    GzipReader& m_gz;
    const ReadProgress& m_progress;
    char m_buffer[1 << 16];
};

std::string hexByte(unsigned char c) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02x", c);
    return hex;
}

[[noreturn]] void unrecognised(unsigned char first) {
    throw Error("byte 0", "unrecognised format (starts with " + hexByte(first) +
                              "): expected a PyTorch snapshot pickle, JSON, gzip or nvidia-smi CSV");
}

Trace readTraceImpl(std::string_view bytes, const std::function<void()>& release,
                    const TraceReadOptions& options);

// A snapshot pickle from bytes in memory or from a source. Strings are copied into the tree, so that the
// input can be released (`release`) before the columns are built.
template <typename Input>
Trace pickleSnapshot(Input& input, std::size_t expectedBytes, const std::function<void()>& release,
                     const TraceReadOptions& options) {
    DataTree tree(expectedBytes);
    ReadLimits limits = options.limits;
    limits.copyStrings = true;
    // The columns' next pages are faulted in on the other core while this one parses (core/prefaulter.h).
    Prefaulter prefaulter;
    const ReadProgress progress = [&](std::size_t done, std::size_t total) {
        prefaulter.advance(tree.growingBlocks());
        return !options.progress || options.progress(done, total);
    };
    const Value root = readPickle(input, tree, limits, progress);
    release();
    return snapshotFromTree(tree, root, TraceFormat::PytorchSnapshot);
}

// nvidia-smi CSV from a decoded stream, a line at a time: a log fails at its first bad line, and a "line"
// longer than any nvidia-smi writes fails when it gets that long.
Trace csvFromStream(PickleSource& in, const TraceReadOptions& options) {
    constexpr std::size_t kMaxLine = 64 * 1024;
    NvidiaSmiCsvReader reader("decompressed byte ");
    std::string line;
    std::size_t offset = 0, lineStart = 0;
    std::vector<char> chunk(1 << 16);
    while (const std::size_t got = in.read(chunk.data(), chunk.size())) {
        if (options.progress && !options.progress(in.consumed(), in.total()))
            throw Error("decompressed byte " + std::to_string(offset), "cancelled");
        for (std::size_t i = 0; i < got; ++i, ++offset) {
            if (chunk[i] == '\n') {
                reader.line(line, lineStart);
                line.clear();
                lineStart = offset + 1;
            } else if (line.size() == kMaxLine) {
                throw Error("decompressed byte " + std::to_string(lineStart),
                            "a line longer than " + std::to_string(kMaxLine) + " bytes: not nvidia-smi CSV");
            } else {
                line.push_back(chunk[i]);
            }
        }
    }
    if (!line.empty())
        reader.line(line, lineStart);
    return reader.finish();
}

// A gzip file is decoded as it is parsed, so a bad one fails at its first bad byte and memory follows
// what was decoded. The format is recognised from the first decoded bytes, so a file of another kind fails
// before the rest is inflated; a gzip inside the gzip is read through a second decoder, and so on, up to
// kMaxGzipLevels.
Trace readGzip(std::string_view bytes, const std::function<void()>& release,
               const TraceReadOptions& options) {
    constexpr std::size_t kMaxGzipLevels = 3;
    std::vector<std::unique_ptr<GzipReader>> levels;
    levels.push_back(std::make_unique<GzipReader>(bytes, options.maxDecompressed));
    while (true) {
        GzipReader& gz = *levels.back();
        const std::string_view head = gz.peek(4096);
        const std::string at = levels.size() == 1 ? std::string("decompressed byte 0")
                                                  : "decompressed byte 0 of the gzip inside (level " +
                                                        std::to_string(levels.size()) + ")";
        if (head.empty())
            throw Error(at, "the compressed file is empty");
        const auto first = static_cast<unsigned char>(head[0]);
        if (isGzip(head)) {
            if (levels.size() == kMaxGzipLevels)
                throw Error(at, "gzip nested more than " + std::to_string(kMaxGzipLevels) + " deep");
            levels.push_back(std::make_unique<GzipReader>(gz, options.maxDecompressed));
            continue;
        }
        if (first == 0x80)
            return pickleSnapshot(gz, bytes.size() * 4, release, options);
        if (looksLikeJson(head)) {
            DataTree tree(0);
            GzipStreamBuf buf(gz, options.progress);
            const Value root = readJsonTree(buf, tree, options.limits, [&] { return buf.position(); });
            release();
            return fromJsonTree(tree, root);
        }
        if (looksLikeCsvText(head))
            return csvFromStream(gz, options);
        throw Error(at, "unrecognised format (starts with " + hexByte(first) +
                            "): expected a PyTorch snapshot pickle, JSON, gzip or nvidia-smi CSV");
    }
}

// Reads `bytes` and calls `release` as soon as nothing points into them any more, so that the input's
// memory is not held while the columns are built.
Trace readTraceImpl(std::string_view bytes, const std::function<void()>& release,
                    const TraceReadOptions& options) {
    if (isGzip(bytes))
        return readGzip(bytes, release, options);
    if (bytes.empty())
        throw Error("byte 0", "the file is empty");
    const auto first = static_cast<unsigned char>(bytes[0]);
    if (first == 0x80)
        return pickleSnapshot(bytes, bytes.size(), release, options);
    if (looksLikeJson(bytes)) {
        DataTree tree(0);
        const Value root = readJsonTree(bytes, tree, options.limits, options.progress);
        release();
        return fromJsonTree(tree, root);
    }
    if (looksLikeCsvText(bytes.substr(0, 4096)))
        return readNvidiaSmiCsv(bytes);
    unrecognised(first);
}

} // namespace

Trace readTrace(std::string bytes, const TraceReadOptions& options) {
    return readTraceImpl(
        bytes, [&] { std::string().swap(bytes); }, options);
}

bool isTraceFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::string head(64 * 1024, '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<std::size_t>(std::max<std::streamsize>(in.gcount(), 0)));
    if (head.empty())
        return false;
    if (isGzip(head) || static_cast<unsigned char>(head[0]) == 0x80)
        return true;
    if (!looksLikeJson(head))
        return head.find(',') != std::string::npos; // nvidia-smi CSV
    const std::size_t open = head.find_first_of("{[");
    if (head[open] == '[')
        return true;
    for (const char* key : {"\"traceEvents\"", "\"device_traces\"", "\"segments\""})
        if (head.find(key) != std::string::npos)
            return head.find("\"headroom.scenario/") == std::string::npos;
    return false;
}

Trace readTraceFile(const std::string& path, const TraceReadOptions& options) {
    try {
        // A pickle is read through a small window; other formats are mapped rather than copied (no
        // zero-filled buffer, and the pages go back as soon as the parser is done with them).
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            throw Error("", std::string("cannot open the file: ") + std::strerror(errno));
        struct stat st {};
        if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
            ::close(fd);
            return readTrace(readTextFile(path, std::size_t(64) << 30), options); // not a regular file
        }
        const auto size = static_cast<std::size_t>(st.st_size);
        if (size == 0) {
            ::close(fd);
            throw Error("byte 0", "the file is empty");
        }
        unsigned char first = 0;
        if (::pread(fd, &first, 1, 0) == 1 && first == 0x80) {
            // A pickle streams through a window (its strings are copied into the tree anyway).
            struct Closer {
                int fd;
                ~Closer() { ::close(fd); }
            } closer{fd};
            if (size >= (std::size_t(1) << 32)) // known before reading: refused before anything is reserved
                throw Error("", "pickles of 4 GiB or more are not supported");
            ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
            FilePickleSource source(fd, size);
            return pickleSnapshot(
                source, size, [] {}, options);
        }
        void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
        ::close(fd);
        if (map == MAP_FAILED)
            return readTrace(readTextFile(path, std::size_t(64) << 30), options);
        bool mapped = true;
        auto release = [&] {
            if (mapped)
                ::munmap(map, size);
            mapped = false;
        };
        try {
            Trace t = readTraceImpl(std::string_view(static_cast<const char*>(map), size), release, options);
            release();
            return t;
        } catch (...) {
            release();
            throw;
        }
    } catch (const Error& e) {
        throw Error(e.where().empty() ? path : path + ": " + e.where(), e.why());
    }
}

} // namespace headroom
