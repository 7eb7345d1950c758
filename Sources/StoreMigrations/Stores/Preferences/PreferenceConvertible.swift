import Foundation

/// A Swift type that ``Preferences`` can store and read back: `String`, `Int`, `Double`, `Bool`,
/// `Date`, `Data`, ``PreferenceValue``, and arrays and string-keyed dictionaries of these.
///
/// ```swift
/// try prefs.set(["a", "b"], for: "recentSearches")            // [String]
/// let recent = prefs.value("recentSearches", as: [String].self)
/// ```
public protocol PreferenceConvertible: Sendable {
    /// Reads the value from `preferenceValue`, or returns `nil` when it holds another kind.
    init?(preferenceValue: PreferenceValue)
    /// The value as it is stored.
    var preferenceValue: PreferenceValue { get }
}

extension PreferenceValue: PreferenceConvertible {
    /// Returns `preferenceValue` itself.
    public init?(preferenceValue: PreferenceValue) { self = preferenceValue }
    /// The value itself.
    public var preferenceValue: PreferenceValue { self }
}

extension String: PreferenceConvertible {
    /// Reads a ``PreferenceValue/string(_:)``.
    public init?(preferenceValue: PreferenceValue) {
        guard case .string(let value) = preferenceValue else { return nil }
        self = value
    }
    /// The string as a ``PreferenceValue/string(_:)``.
    public var preferenceValue: PreferenceValue { .string(self) }
}

extension Int: PreferenceConvertible {
    /// Reads a ``PreferenceValue/int(_:)``, or a ``PreferenceValue/double(_:)`` holding a whole
    /// number that fits (some writers store `3` as `3.0`).
    public init?(preferenceValue: PreferenceValue) {
        switch preferenceValue {
        case .int(let value): self = value
        case .double(let value):
            guard let exact = Int(exactly: value) else { return nil }
            self = exact
        default: return nil
        }
    }
    /// The integer as a ``PreferenceValue/int(_:)``.
    public var preferenceValue: PreferenceValue { .int(self) }
}

extension Double: PreferenceConvertible {
    /// Reads a ``PreferenceValue/double(_:)``, or a ``PreferenceValue/int(_:)`` that a `Double`
    /// represents exactly.
    public init?(preferenceValue: PreferenceValue) {
        switch preferenceValue {
        case .double(let value): self = value
        case .int(let value):
            guard let exact = Double(exactly: value) else { return nil }
            self = exact
        default: return nil
        }
    }
    /// The number as a ``PreferenceValue/double(_:)``.
    public var preferenceValue: PreferenceValue { .double(self) }
}

extension Bool: PreferenceConvertible {
    /// Reads a ``PreferenceValue/bool(_:)`` only: `0` and `1` are integers, not Booleans.
    public init?(preferenceValue: PreferenceValue) {
        guard case .bool(let value) = preferenceValue else { return nil }
        self = value
    }
    /// The Boolean as a ``PreferenceValue/bool(_:)``.
    public var preferenceValue: PreferenceValue { .bool(self) }
}

extension Date: PreferenceConvertible {
    /// Reads a ``PreferenceValue/date(_:)``, or a ``PreferenceValue/string(_:)`` in ISO 8601
    /// form (`2024-05-01T09:30:00Z`, optionally with fractional seconds), which is how many apps
    /// wrote dates into JSON before adopting this library.
    public init?(preferenceValue: PreferenceValue) {
        switch preferenceValue {
        case .date(let value): self = value
        case .string(let text):
            guard let date = Date(iso8601: text) else { return nil }
            self = date
        default: return nil
        }
    }
    /// The date as a ``PreferenceValue/date(_:)``.
    public var preferenceValue: PreferenceValue { .date(self) }

    /// Parses an ISO 8601 date-time with or without fractional seconds.
    init?(iso8601 text: String) {
        if let date = try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text) {
            self = date
        } else if let date = try? Date.ISO8601FormatStyle().parse(text) {
            self = date
        } else {
            return nil
        }
    }
}

extension Data: PreferenceConvertible {
    /// Reads a ``PreferenceValue/data(_:)``.
    public init?(preferenceValue: PreferenceValue) {
        guard case .data(let value) = preferenceValue else { return nil }
        self = value
    }
    /// The bytes as a ``PreferenceValue/data(_:)``.
    public var preferenceValue: PreferenceValue { .data(self) }
}

extension Array: PreferenceConvertible where Element: PreferenceConvertible {
    /// Reads a ``PreferenceValue/array(_:)`` whose every element converts to `Element`.
    public init?(preferenceValue: PreferenceValue) {
        guard case .array(let values) = preferenceValue else { return nil }
        var elements: [Element] = []
        elements.reserveCapacity(values.count)
        for value in values {
            guard let element = Element(preferenceValue: value) else { return nil }
            elements.append(element)
        }
        self = elements
    }
    /// The elements as a ``PreferenceValue/array(_:)``.
    public var preferenceValue: PreferenceValue { .array(map(\.preferenceValue)) }
}

extension Dictionary: PreferenceConvertible where Key == String, Value: PreferenceConvertible {
    /// Reads a ``PreferenceValue/dictionary(_:)`` whose every value converts to `Value`.
    public init?(preferenceValue: PreferenceValue) {
        guard case .dictionary(let values) = preferenceValue else { return nil }
        var converted: [String: Value] = [:]
        converted.reserveCapacity(values.count)
        for (key, value) in values {
            guard let element = Value(preferenceValue: value) else { return nil }
            converted[key] = element
        }
        self = converted
    }
    /// The entries as a ``PreferenceValue/dictionary(_:)``.
    public var preferenceValue: PreferenceValue { .dictionary(mapValues(\.preferenceValue)) }
}
