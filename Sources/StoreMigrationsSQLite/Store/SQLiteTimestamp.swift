/// A history row's `applied_at` as SQLite's `strftime('%Y-%m-%dT%H:%M:%fZ', seconds, 'unixepoch')`
/// writes it (`2026-11-27T15:04:05.123Z`), made in Swift with SQLite's own arithmetic.
///
/// The history's rows were written by that `strftime` in earlier releases and must read the same,
/// byte for byte; running it in SQLite for each of the hundreds of rows a creation from the
/// declared schema adds cost more than the rest of their `INSERT`.
struct SQLiteTimestamp {
    /// The stored text.
    let text: String

    /// SQLite's Julian day number of 1970-01-01T00:00:00Z, in milliseconds.
    private static let unixEpoch = 210_866_760_000_000.0
    /// The first millisecond past 9999-12-31T23:59:59.999Z, SQLite's last date.
    private static let end: Int64 = 464_269_060_800_000

    /// The timestamp of `seconds` since 1970; `nil` where SQLite's `strftime` gives NULL (before
    /// 4714 BC, after 9999, not a number) and before the year 0, which SQLite releases write
    /// differently from one another.
    init?(secondsSince1970 seconds: Double) {
        // As SQLite's `unixepoch` modifier: to milliseconds of the Julian day, rounded half up.
        let julian = seconds * 1000 + Self.unixEpoch
        guard julian >= 0, julian < Double(Self.end) else { return nil }
        let milliseconds = Int64(julian + 0.5)
        guard milliseconds < Self.end else { return nil }

        // SQLite's `computeYMD` and `computeHMS`, with its integer and floating-point steps, so
        // that no date rounds differently.
        let z = Int((milliseconds + 43_200_000) / 86_400_000)
        var a = Int((Double(z) - 1_867_216.25) / 36_524.25)
        a = z + 1 + a - a / 4
        let b = a + 1524
        let c = Int((Double(b) - 122.1) / 365.25)
        let d = (36525 * (c & 32767)) / 100
        let e = Int(Double(b - d) / 30.6001)
        let day = b - d - Int(30.6001 * Double(e))
        let month = e < 14 ? e - 1 : e - 13
        let year = month > 2 ? c - 4716 : c - 4715
        guard year >= 0 else { return nil }
        let dayMilliseconds = Int((milliseconds + 43_200_000) % 86_400_000)
        let minutes = dayMilliseconds / 60000, secondMilliseconds = dayMilliseconds % 60000

        var bytes: [UInt8] = []
        bytes.reserveCapacity(24)
        func append(_ value: Int, digits: Int, then separator: Unicode.Scalar) {
            var divisor = 1
            for _ in 1..<digits { divisor *= 10 }
            while divisor > 0 {
                bytes.append(UInt8(ascii: "0") + UInt8(value / divisor % 10))
                divisor /= 10
            }
            bytes.append(UInt8(ascii: separator))
        }
        append(year, digits: 4, then: "-")
        append(month, digits: 2, then: "-")
        append(day, digits: 2, then: "T")
        append(minutes / 60, digits: 2, then: ":")
        append(minutes % 60, digits: 2, then: ":")
        append(secondMilliseconds / 1000, digits: 2, then: ".")
        append(secondMilliseconds % 1000, digits: 3, then: "Z")
        text = String(decoding: bytes, as: UTF8.self)
    }
}
