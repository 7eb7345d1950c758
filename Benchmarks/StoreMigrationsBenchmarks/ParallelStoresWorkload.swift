import Foundation
import StoreMigrations

/// Two stores, each with one CPU-bound migration of about `seconds`: the run against the same two
/// bodies one after the other.
struct ParallelStoresWorkload {
    let seconds: Double
    let timer: Timer

    /// Iterations of `spin` that take about `seconds` on this machine.
    private func calibrate() -> Int {
        var iterations = 1_000_000
        while true {
            let start = ContinuousClock.now
            blackHole(spin(iterations))
            let elapsed = ContinuousClock.now - start
            let measured = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            if measured > 0.05 { return Int(Double(iterations) * seconds / measured) }
            iterations *= 4
        }
    }

    func run() throws -> [Measurement] {
        let iterations = calibrate()
        let library = try timer.median {
            let coordinator = MigrationCoordinator(appVersion: "1")
            coordinator.maxConcurrentStores = 2
            for name in ["a", "b"] {
                try coordinator.manager(name, store: InMemoryStore(UInt64(0))).register("1") { value in value = spin(iterations) }
            }
            try coordinator.run()
        }
        let sequential = try timer.median {
            blackHole(spin(iterations))
            blackHole(spin(iterations))
        }
        return [Measurement(
            workload: "parallel stores (2 × \(String(format: "%.2f", seconds)) s CPU)", metric: "run vs one after the other",
            runs: timer.runs, libraryMedian: library, baselineMedian: sequential, target: "speed-up ≥ 1.8× (ratio ≤ 0.56)")]
    }
}

/// Keeps the optimizer from removing the computation of `value`.
@inline(never) @_optimize(none)
func blackHole<T>(_ value: T) {}

/// Work the optimizer cannot remove: a xorshift walk.
@inline(never) @_optimize(none)
func spin(_ iterations: Int) -> UInt64 {
    var x: UInt64 = 88_172_645_463_325_252
    for _ in 0..<iterations {
        x ^= x << 13
        x ^= x >> 7
        x ^= x << 17
    }
    return x
}
