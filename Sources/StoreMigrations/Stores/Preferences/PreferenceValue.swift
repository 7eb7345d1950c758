import Foundation

/// One value in ``Preferences``: what a property list can hold, and JSON's `null`.
///
/// Literals build values directly, so nested dictionaries and mixed arrays read naturally:
///
/// ```swift
/// try prefs.set(["width": 800, "height": 600, "title": "Main"] as PreferenceValue, for: "window")
/// try prefs.set([1, "two", 3.0] as PreferenceValue, for: "mixed")
/// if case .dictionary(let window)? = prefs["window"] { … }
/// ```
///
/// Integers and floating-point numbers are distinct cases, as in property lists; the typed getters
/// of ``Preferences`` convert between them when no precision is lost.
///
/// A JSON file's `null` is kept as ``null``: read, editable and written back. Property lists
/// (and `UserDefaults`) have no null, so a store of that kind refuses to write one and names
/// its key:
///
/// ```swift
/// if prefs["lastUser"] == .null { prefs.removeValue(for: "lastUser") }
/// try prefs.set(PreferenceValue.null, for: "token")      // JSON files only
/// ```
public enum PreferenceValue: Sendable, Hashable {
    /// Text.
    case string(String)
    /// A 64-bit signed integer.
    case int(Int)
    /// A floating-point number. JSON files cannot hold infinities or NaN.
    case double(Double)
    /// A Boolean, never confused with the integers 0 and 1.
    case bool(Bool)
    /// A point in time.
    case date(Date)
    /// Raw bytes.
    case data(Data)
    /// An ordered list of values, of any mix of kinds.
    case array([PreferenceValue])
    /// A nested dictionary.
    case dictionary([String: PreferenceValue])
    /// JSON's `null`, kept as the file holds it. Property lists cannot hold it.
    case null

    /// The kind of value with its article, for messages and the testing kit's snapshots: "a
    /// string", "an integer", ….
    package var kindDescription: String {
        switch self {
        case .string: return "a string"
        case .int: return "an integer"
        case .double: return "a floating-point number"
        case .bool: return "a Boolean"
        case .date: return "a date"
        case .data: return "data"
        case .array: return "an array"
        case .dictionary: return "a dictionary"
        case .null: return "null"
        }
    }
}

extension PreferenceValue: ExpressibleByStringLiteral {
    /// Creates a ``string(_:)`` value.
    public init(stringLiteral value: String) { self = .string(value) }
}

extension PreferenceValue: ExpressibleByIntegerLiteral {
    /// Creates an ``int(_:)`` value.
    public init(integerLiteral value: Int) { self = .int(value) }
}

extension PreferenceValue: ExpressibleByFloatLiteral {
    /// Creates a ``double(_:)`` value.
    public init(floatLiteral value: Double) { self = .double(value) }
}

extension PreferenceValue: ExpressibleByBooleanLiteral {
    /// Creates a ``bool(_:)`` value.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension PreferenceValue: ExpressibleByArrayLiteral {
    /// Creates an ``array(_:)`` value.
    public init(arrayLiteral elements: PreferenceValue...) { self = .array(elements) }
}

extension PreferenceValue: ExpressibleByDictionaryLiteral {
    /// Creates a ``dictionary(_:)`` value; a repeated key keeps its last value.
    public init(dictionaryLiteral elements: (String, PreferenceValue)...) {
        self = .dictionary(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}
