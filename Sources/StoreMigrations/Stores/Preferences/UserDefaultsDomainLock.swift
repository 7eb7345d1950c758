import Foundation

/// The lock of one `UserDefaults` domain in this process: a step holds it to read the domain,
/// run its body and write, and a read of the store holds it too, so that it never parses the
/// domain's file while a step rewrites it (Linux's Foundation rewrites it in place).
///
/// A read on the thread that holds the lock for a step (a body reading its own store) reads
/// without taking it again: the step excludes every other writer of the process already, and
/// `NSLock` is not reentrant. A step inside a step still waits for itself, as before.
final class UserDefaultsDomainLock: @unchecked Sendable {
    // @unchecked: `lock` is thread-safe, `key` a constant; the marker lives in the holding
    // thread's own dictionary, which only that thread touches.
    private let lock = NSLock()
    /// Marks, in the dictionary of the thread running a step, that it holds this lock.
    private let key: String

    init(domain: String) {
        key = "StoreMigrations.UserDefaultsDomainLock." + domain
    }

    /// Runs a step's `body` holding the lock.
    func withStep<T>(_ body: () throws -> T) rethrows -> T {
        try lock.withLock {
            Thread.current.threadDictionary[key] = true
            defer { Thread.current.threadDictionary.removeObject(forKey: key) }
            return try body()
        }
    }

    /// Runs a read's `body` holding the lock, or as it is on the thread of a step holding it.
    func withRead<T>(_ body: () throws -> T) rethrows -> T {
        if Thread.current.threadDictionary[key] != nil { return try body() }
        return try lock.withLock(body)
    }
}
