/// The keys leading to a value in ``Preferences``: one top-level key, or keys through nested
/// dictionaries.
///
/// A key is the key you wrote, as `UserDefaults` takes it: a string literal is one top-level key,
/// dots included, so reverse-DNS keys need no escaping. A path through nested dictionaries is
/// spelled explicitly, as an array of keys or by ``init(parsing:)``, never guessed from dots:
///
/// ```swift
/// prefs.bool("com.example.showHelp")            // the top-level key "com.example.showHelp"
/// prefs.bool(["onboarding", "showHelp"])        // key "showHelp" inside dictionary "onboarding"
/// prefs.bool(.key(name))                        // a top-level key held in a variable
/// let path = try PreferenceKeyPath(parsing: "onboarding.showHelp")   // the same nested path
/// ```
///
/// ``init(parsing:)`` reads dots as separators; a literal dot in a key is written `\.` there and
/// a backslash `\\`.
public struct PreferenceKeyPath: Sendable, Hashable, CustomStringConvertible {
    /// The keys, outermost first; never empty.
    public let components: [String]

    /// A path through `components`, each taken as it is.
    ///
    /// - Precondition: `components` is not empty.
    public init(_ components: [String]) {
        precondition(!components.isEmpty, "A preference key path needs at least one key")
        self.components = components
    }

    /// A path to the top-level key `key`, taken as it is (dots included).
    public static func key(_ key: String) -> PreferenceKeyPath {
        PreferenceKeyPath([key])
    }

    /// Parses dot-separated keys, where `\.` is a literal dot and `\\` a backslash.
    ///
    /// - Throws: ``PreferencesError/invalidKeyPath(text:reason:)`` for an empty key (`a..b`, a
    ///   leading or trailing dot, an empty text) or an unknown escape.
    public init(parsing text: String) throws {
        var components: [String] = []
        var current = String.UnicodeScalarView()
        // Scalar by scalar, as the description escapes them: a dot that a combining mark follows
        // is one character, not a dot, to a `Character` comparison.
        var scalars = text.unicodeScalars.makeIterator()
        while let scalar = scalars.next() {
            switch scalar {
            case "\\":
                switch scalars.next() {
                case "."?: current.append(".")
                case "\\"?: current.append("\\")
                case let other?:
                    throw PreferencesError.invalidKeyPath(
                        text: text, reason: "\"\\\(other)\" is not an escape; only \\. and \\\\ are")
                case nil:
                    throw PreferencesError.invalidKeyPath(text: text, reason: "it ends with a lone backslash")
                }
            case ".":
                components.append(String(current))
                current = String.UnicodeScalarView()
            default:
                current.append(scalar)
            }
        }
        components.append(String(current))
        if components.contains(where: \.isEmpty) {
            throw PreferencesError.invalidKeyPath(
                text: text,
                reason: text.isEmpty ? "it is empty" : "it has an empty key (two dots in a row, or a dot at an end)")
        }
        self.components = components
    }

    /// A top-level key as it is; a nested path in the dotted form ``init(parsing:)`` reads, with
    /// dots and backslashes in keys escaped.
    public var description: String {
        guard components.count > 1 else { return components[0] }
        return components
            .map { $0.escapingASCII("\\.", with: "\\") }
            .joined(separator: ".")
    }
}

extension PreferenceKeyPath: ExpressibleByStringLiteral {
    /// The top-level key `value`, as it is: `"com.example.showHelp"` is one key, not a path.
    public init(stringLiteral value: String) {
        self.init([value])
    }
}

extension PreferenceKeyPath: ExpressibleByArrayLiteral {
    /// Takes each element as one key, as it is: `["com.example.flag"]`.
    ///
    /// - Precondition: the literal is not empty.
    public init(arrayLiteral elements: String...) {
        self.init(elements)
    }
}
