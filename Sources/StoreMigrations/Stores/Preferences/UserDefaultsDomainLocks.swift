import Foundation

/// One lock per `UserDefaults` domain, shared by every ``UserDefaultsStore`` of the process, so
/// that two store objects for one suite exclude each other's steps as one object's steps do.
///
/// `UserDefaults` has no lock of its own that a read-modify-write could hold; this is the store's.
final class UserDefaultsDomainLocks: @unchecked Sendable {
    // @unchecked: `locks` is only read and written with `lock` held; the locks it hands out are
    // themselves thread-safe and never removed, so every store of a domain gets the same one.
    static let shared = UserDefaultsDomainLocks()

    private let lock = NSLock()
    private var locks: [String: UserDefaultsDomainLock] = [:]

    /// The lock of the domain named `domain`, created on first use.
    func lock(for domain: String) -> UserDefaultsDomainLock {
        lock.withLock {
            if let existing = locks[domain] { return existing }
            let created = UserDefaultsDomainLock(domain: domain)
            locks[domain] = created
            return created
        }
    }
}
