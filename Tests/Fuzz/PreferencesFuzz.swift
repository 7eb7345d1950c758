import Foundation

/// Both preferences decoders: every input gives values or a `PreferencesFormatError`, and values
/// that were read survive being written and read again, since a migration step writes back what
/// it read.
enum PreferencesFuzz {
    static func runJSON(_ input: UnsafeRawBufferPointer) {
        guard let values = decode(Data(input), with: PreferencesJSON.decode) else { return }
        // The decoder refuses every number JSON cannot write (infinities), so all it reads writes.
        let written: Data
        do {
            written = try PreferencesJSON.encode(values)
        } catch {
            fatalError("JSON that reads cannot be written: \(error)")
        }
        let again = readBack(written, with: PreferencesJSON.decode)
        // JSON writes dates to the nanosecond at most: a text with more digits reads as a date
        // that the file keeps only to the nearest nanosecond.
        require(same(.dictionary(again), .dictionary(values), dateTolerance: 1e-9), "JSON written differs when read back")
        // A file is rewritten at every step: the second rewrite must not move anything.
        require((try? PreferencesJSON.encode(again)) == written, "JSON written twice differs")
    }

    static func runPropertyList(_ input: UnsafeRawBufferPointer) {
        let data = Data(input)
        guard let (values, format) = decode(data, with: PreferencesPropertyList.decodeKeepingFormat) else { return }
        // A store writes a file back in the format it read it in; a new file is binary.
        for format in format == .binary ? [.binary] : [format, .binary] {
            let written: Data
            do {
                written = try PreferencesPropertyList.encode(values, format: format)
            } catch {
                fatalError("a property list that reads cannot be written as \(format): \(error)")
            }
            let again = readBack(written, with: PreferencesPropertyList.decode)
            require(same(.dictionary(again), .dictionary(values)), "a property list written as \(format) differs when read back")
        }
    }

    /// What `decode` reads from `data`, or `nil` when it refuses it with the one error it may throw.
    private static func decode<T>(_ data: Data, with decode: (Data) throws -> T) -> T? {
        do {
            return try decode(data)
        } catch is PreferencesFormatError {
            return nil
        } catch {
            fatalError("threw \(type(of: error)), not a PreferencesFormatError: \(error)")
        }
    }

    private static func readBack(_ data: Data, with decode: (Data) throws -> [String: PreferenceValue]) -> [String: PreferenceValue] {
        do {
            return try decode(data)
        } catch {
            fatalError("what was written does not read back: \(error)")
        }
    }

    /// Equality that takes NaN for NaN, since a property list may hold one, and dates within
    /// `dateTolerance` seconds for equal. Written out rather than printed on failure: printing a
    /// date far out of range traps in Foundation.
    static func same(_ a: PreferenceValue, _ b: PreferenceValue, dateTolerance: Double = 0) -> Bool {
        switch (a, b) {
        case let (.double(x), .double(y)): return x == y || (x.isNaN && y.isNaN)
        case let (.date(x), .date(y)):
            let (x, y) = (x.timeIntervalSinceReferenceDate, y.timeIntervalSinceReferenceDate)
            return abs(x - y) <= dateTolerance || x == y || (x.isNaN && y.isNaN)
        case let (.array(x), .array(y)):
            return x.count == y.count && zip(x, y).allSatisfy { same($0, $1, dateTolerance: dateTolerance) }
        case let (.dictionary(x), .dictionary(y)):
            return x.count == y.count
                && x.allSatisfy { key, value in y[key].map { same(value, $0, dateTolerance: dateTolerance) } ?? false }
        default: return a == b
        }
    }
}
