import Foundation

/// One row of the results: the library's way against its baseline, timed on identical inputs.
struct Measurement: Encodable {
    let workload: String
    let metric: String
    let runs: Int
    let libraryMedian: Double
    let baselineMedian: Double?
    let target: String
    /// Peak resident memory above the process's level before the timed code, in MiB.
    var libraryPeakMiB: Double?
    var baselinePeakMiB: Double?
    /// What the figures alone do not say (attempts, batches, a side that never finished).
    var note: String?

    var ratio: Double? { baselineMedian.map { libraryMedian / $0 } }

    private enum CodingKeys: String, CodingKey {
        case workload, metric, runs, libraryMedian, baselineMedian, ratio, target, libraryPeakMiB, baselinePeakMiB
    }

    /// Every field and the ratio the table prints, so that a reader of the JSON compares
    /// results without working it out again.
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(workload, forKey: .workload)
        try container.encode(metric, forKey: .metric)
        try container.encode(runs, forKey: .runs)
        try container.encode(libraryMedian, forKey: .libraryMedian)
        try container.encodeIfPresent(baselineMedian, forKey: .baselineMedian)
        try container.encodeIfPresent(ratio, forKey: .ratio)
        try container.encode(target, forKey: .target)
        try container.encodeIfPresent(libraryPeakMiB, forKey: .libraryPeakMiB)
        try container.encodeIfPresent(baselinePeakMiB, forKey: .baselinePeakMiB)
    }
}

/// Times closures: a warm-up, then `runs` timed runs, and keeps the median.
struct Timer {
    let runs: Int

    /// Times `body`, calling `prepare` before each run outside the timed part.
    func median(prepare: () throws -> Void = {}, _ body: () throws -> Void) throws -> Double {
        try prepare()
        try body()
        var samples: [Double] = []
        for _ in 0..<runs {
            try prepare()
            let start = ContinuousClock.now
            try body()
            let elapsed = ContinuousClock.now - start
            samples.append(Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        }
        samples.sort()
        return samples[samples.count / 2]
    }
}

extension Timer {
    /// Times the library's way and the baseline's way taking turns, run by run, so that other
    /// work on the machine (two shared cores) slows both alike; the first turn warms up. Each
    /// side's `prepare` runs before its run, outside the timing. With `measuringMemory`, each
    /// run's peak memory is read too (resetting the peak costs time of its own, too much for
    /// workloads of microseconds).
    func compare(
        measuringMemory: Bool = false,
        prepareLibrary: () throws -> Void = {}, library: () throws -> Void,
        prepareBaseline: () throws -> Void = {}, baseline: () throws -> Void
    ) throws -> (library: Samples, baseline: Samples) {
        var librarySamples = Samples(measuringMemory: measuringMemory), baselineSamples = Samples(measuringMemory: measuringMemory)
        for _ in 0...runs {
            try prepareLibrary()
            try librarySamples.measure(library)
            try prepareBaseline()
            try baselineSamples.measure(baseline)
        }
        return (librarySamples, baselineSamples)
    }
}

/// The durations and peak memory of one side's runs, the first of which warms up.
struct Samples {
    let measuringMemory: Bool
    private var seconds: [Double] = []
    private(set) var peakMiB: Double?

    init(measuringMemory: Bool) {
        self.measuringMemory = measuringMemory
    }

    mutating func measure(_ body: () throws -> Void) throws {
        // Memory is read outside the timed part.
        if measuringMemory { PeakMemory.reset() }
        let before = measuringMemory ? PeakMemory.current("VmRSS") : nil
        let start = ContinuousClock.now
        try body()
        let elapsed = ContinuousClock.now - start
        seconds.append(Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        if let before, let peak = PeakMemory.current() { peakMiB = max(peakMiB ?? 0, max(0, peak - before)) }
    }

    var median: Double {
        let timed = seconds.count > 1 ? Array(seconds.dropFirst()).sorted() : seconds
        return timed[timed.count / 2]
    }
}

/// Peak resident memory, from Linux's /proc (VmHWM), which `clear_refs` resets between
/// measurements. Elsewhere it reports nothing.
enum PeakMemory {
    static func reset() {
        try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
    }

    static func current(_ field: String = "VmHWM") -> Double? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix(field + ":") {
            let kilobytes = line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.flatMap { Double($0) }
            return kilobytes.map { $0 / 1024 }
        }
        return nil
    }

}

/// A seeded generator, so that every run builds the same datasets.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// A line that rewrites itself while a dataset is built, on a terminal; piped to a file or a CI
/// log, where a carriage return does not rewrite anything, one line a quarter.
struct ProgressLine {
    let label: String
    private let isTerminal = isatty(STDERR_FILENO) == 1

    init(label: String) {
        self.label = label
    }

    func update(_ done: Int, of total: Int) {
        guard total > 0 else { return }
        let steps = isTerminal ? 20 : 4
        guard done == total || done % max(1, total / steps) == 0 else { return }
        let text = "  building \(label): \(done * 100 / total)%"
        FileHandle.standardError.write(Data((isTerminal ? "\r" + text + (done == total ? "\n" : "") : text + "\n").utf8))
    }
}

extension Duration {
    var inSeconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

func temporaryDirectory(_ name: String) throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("store-migrations-bench-\(name)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

func formatSeconds(_ seconds: Double) -> String {
    if seconds < 0.001 { return String(format: "%.1f µs", seconds * 1e6) }
    if seconds < 1 { return String(format: "%.2f ms", seconds * 1e3) }
    return String(format: "%.3f s", seconds)
}

func printTable(_ rows: [Measurement]) {
    var header = ["workload", "metric", "runs", "library", "baseline", "ratio", "peak MiB (lib/base)", "target"]
    let hasNotes = rows.contains { $0.note != nil }
    if hasNotes { header.append("note") }
    var table = [header]
    for row in rows {
        let memory = row.libraryPeakMiB.map { lib in String(format: "%.1f / %@", lib, row.baselinePeakMiB.map { String(format: "%.1f", $0) } ?? "-") } ?? "-"
        table.append([
            row.workload, row.metric, String(row.runs), formatSeconds(row.libraryMedian),
            row.baselineMedian.map(formatSeconds) ?? "-", row.ratio.map { String(format: "%.2f×", $0) } ?? "-", memory, row.target,
        ] + (hasNotes ? [row.note ?? ""] : []))
    }
    let widths = header.indices.map { column in table.map { $0[column].count }.max() ?? 0 }
    for (index, row) in table.enumerated() {
        print(row.enumerated().map { $0.element.padding(toLength: widths[$0.offset], withPad: " ", startingAt: 0) }.joined(separator: " | "))
        if index == 0 { print(widths.map { String(repeating: "-", count: $0) }.joined(separator: "-|-")) }
    }
}
