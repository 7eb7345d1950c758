import Foundation

/// The outer bound of every wait for an event in the tests: ten minutes, a safety net that ends
/// a test that would otherwise hang, never a deadline. A test waits for the event itself (a
/// semaphore's signal, a file, a process's exit, a row), however long a loaded machine takes to
/// get there; a bound a few times a step's usual time failed tests at a load of 5 to 7.
package let eventWaitBound: TimeInterval = 600

extension DispatchSemaphore {
    /// Waits for a signal, at most ``eventWaitBound``: whether it came.
    package func waitForEvent() -> Bool {
        wait(timeout: .now() + eventWaitBound) == .success
    }
}

/// Checks `condition` every few milliseconds until it holds, at most ``eventWaitBound``: whether
/// it came to hold.
@discardableResult
package func waitUntil(_ condition: () throws -> Bool) rethrows -> Bool {
    let bound = ContinuousClock.now + .seconds(eventWaitBound)
    while try !condition() {
        if ContinuousClock.now >= bound { return false }
        usleep(1_000)
    }
    return true
}
