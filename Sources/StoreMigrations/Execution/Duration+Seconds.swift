import Foundation

extension Duration {
    /// The duration in seconds, with its fraction, for reports and history rows.
    package var seconds: TimeInterval {
        let parts = components
        return TimeInterval(parts.seconds) + TimeInterval(parts.attoseconds) / 1e18
    }
}
