import Foundation

/// Threads of this process standing in for the replicas of a service that start at once: each
/// runs the job it is given, all together, as often as asked. The threads are made once, so
/// that a timed round costs only waking them and waiting for the last.
final class ReplicaThreads: @unchecked Sendable {
    let count: Int
    // `job` and `failure` are written by `run(_:)` while every thread waits on its own `start`
    // semaphore, and read by the threads between that wait and their `done` signal; `lock`
    // guards `failure` among the threads.
    private var job: (@Sendable (Int) throws -> Void)?
    private var failure: Error?
    private let lock = NSLock()
    // One semaphore per thread: with one shared, a thread done early could take a second
    // thread's start and run two jobs one after the other.
    private let starts: [DispatchSemaphore]
    private let done = DispatchSemaphore(value: 0)

    init(count: Int) {
        self.count = count
        starts = (0..<count).map { _ in DispatchSemaphore(value: 0) }
        for index in 0..<count {
            let thread = Thread { [self] in loop(index) }
            thread.name = "replica \(index)"
            thread.start()
        }
    }

    /// Runs `job(index)` on every thread at once and returns when all are done; rethrows a
    /// job's error.
    func run(_ job: @escaping @Sendable (Int) throws -> Void) throws {
        self.job = job
        failure = nil
        for start in starts { start.signal() }
        for _ in 0..<count { done.wait() }
        self.job = nil
        if let failure { throw failure }
    }

    /// Ends the threads.
    func stop() {
        for start in starts { start.signal() }
        for _ in 0..<count { done.wait() }
    }

    private func loop(_ index: Int) {
        while true {
            starts[index].wait()
            guard let job else {
                done.signal()
                return
            }
            do {
                try job(index)
            } catch {
                lock.withLock { failure = failure ?? error }
            }
            done.signal()
        }
    }
}
