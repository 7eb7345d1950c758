/// A migration or app version: dot-separated non-negative integers with an optional
/// sub-migration number, such as `2`, `1.2.5` or `1.1-2`.
///
/// Versions compare numerically, component by component, and missing trailing components count
/// as zero, so `1.0 == 1.0.0`. A sub-migration `V-S` runs after `V` without the app's version
/// changing: it sorts after `V` and after `V-(S-1)`, and before anything greater than `V`.
///
/// ```swift
/// let versions: [Version] = ["1.2", "1.1-1", "1.1.1", "1.1", 3]
/// versions.sorted() // [1.1, 1.1-1, 1.1.1, 1.2, 3]
/// try Version(parsing: "1.3.1rc1") // throws VersionError
/// ```
///
/// Components may have any number of digits; they are compared as numbers, not as text
/// (`1.10 > 1.9`).
public struct Version: Sendable {
    /// The normalized value: trailing zero components removed, leading zeros dropped, so that
    /// equal versions have equal storage.
    enum Storage: Hashable, Sendable {
        /// Up to four components (missing ones are zero) and a sub-migration number that each fit
        /// in 32 bits, the common case: no allocation, so plans of many thousands of steps copy
        /// versions for free. `subMigration` is 0 for none and `S + 1` for `-S`.
        case compact(UInt32, UInt32, UInt32, UInt32, subMigration: UInt64)
        /// Anything larger, as decimal digit strings without leading zeros.
        case arbitrary(components: [String], subMigration: String?)

        init(components: [String], subMigration: String?) {
            var components = components
            while components.count > 1, components.last == "0" { components.removeLast() }
            if components.count <= 4, let numbers = Self.compactNumbers(components),
               subMigration.map({ UInt32($0) != nil }) ?? true {
                let sub = subMigration.flatMap { UInt32($0) }.map { UInt64($0) + 1 } ?? 0
                self = .compact(numbers[0], numbers[1], numbers[2], numbers[3], subMigration: sub)
            } else {
                self = .arbitrary(components: components, subMigration: subMigration)
            }
        }

        private static func compactNumbers(_ components: [String]) -> [UInt32]? {
            var numbers: [UInt32] = [0, 0, 0, 0]
            for (index, component) in components.enumerated() {
                guard let number = UInt32(component) else { return nil }
                numbers[index] = number
            }
            return numbers
        }

        /// The digit strings of the components (at least one) and of the sub-migration number.
        var digits: (components: [String], subMigration: String?) {
            switch self {
            case let .arbitrary(components, subMigration):
                return (components, subMigration)
            case let .compact(c0, c1, c2, c3, subMigration):
                var components = [c0, c1, c2, c3].map { String($0) }
                while components.count > 1, components.last == "0" { components.removeLast() }
                return (components, subMigration == 0 ? nil : String(subMigration - 1))
            }
        }
    }

    let storage: Storage
    /// The text the version was written as, kept for display.
    private let text: String

    /// Parses `text` in the grammar `N(.N)*(-S)?`.
    ///
    /// - Throws: ``VersionError`` quoting the text when it is not a version.
    public init(parsing text: String) throws {
        let utf8 = Array(text.utf8)
        var components: [String] = []
        var subMigration: String?
        var index = 0

        func readNumber() throws -> String {
            let start = index
            while index < utf8.count, utf8[index] >= UInt8(ascii: "0"), utf8[index] <= UInt8(ascii: "9") {
                index += 1
            }
            guard index > start else {
                throw VersionError(text: text, reason: Version.reason(at: index, in: utf8))
            }
            var firstSignificant = start
            while firstSignificant < index - 1, utf8[firstSignificant] == UInt8(ascii: "0") {
                firstSignificant += 1
            }
            return String(decoding: utf8[firstSignificant..<index], as: UTF8.self)
        }

        components.append(try readNumber())
        while index < utf8.count, utf8[index] == UInt8(ascii: ".") {
            index += 1
            components.append(try readNumber())
        }
        if index < utf8.count, utf8[index] == UInt8(ascii: "-") {
            index += 1
            subMigration = try readNumber()
        }
        guard index == utf8.count else {
            throw VersionError(text: text, reason: Version.reason(at: index, in: utf8))
        }
        self.storage = Storage(components: components, subMigration: subMigration)
        self.text = text
    }

    private static func reason(at index: Int, in utf8: [UInt8]) -> String {
        if utf8.isEmpty { return "it is empty" }
        if index >= utf8.count { return "it ends where a number is expected" }
        let character = String(decoding: [utf8[index]], as: UTF8.self)
        return "'\(character)' at offset \(index) is not allowed here"
    }

    /// Creates a one-component version, like the compatibility levels `1`, `2`, `3`.
    ///
    /// - Precondition: `level` is not negative.
    public init(_ level: Int) {
        precondition(level >= 0, "Version \(level) is negative; versions are non-negative integers")
        if let compact = UInt32(exactly: level) {
            self.storage = .compact(compact, 0, 0, 0, subMigration: 0)
        } else {
            self.storage = .arbitrary(components: [String(level)], subMigration: nil)
        }
        self.text = String(level)
    }

    /// This version without its sub-migration number: `1.1` for `1.1-2`.
    public var base: Version {
        switch storage {
        case .compact(_, _, _, _, subMigration: 0), .arbitrary(_, subMigration: nil):
            return self
        case let .compact(c0, c1, c2, c3, _):
            return Version(storage: .compact(c0, c1, c2, c3, subMigration: 0))
        case let .arbitrary(components, _):
            // Without its sub-migration number, a version may fit the compact form again.
            return Version(storage: Storage(components: components, subMigration: nil))
        }
    }

    /// Whether the version names a sub-migration (`1.1-2`).
    public var isSubMigration: Bool {
        switch storage {
        case .compact(_, _, _, _, let subMigration): return subMigration != 0
        case .arbitrary(_, let subMigration): return subMigration != nil
        }
    }

    private init(storage: Storage) {
        self.storage = storage
        let digits = storage.digits
        self.text = digits.components.joined(separator: ".") + (digits.subMigration.map { "-" + $0 } ?? "")
    }
}

/// The error thrown when text is not a valid ``Version``.
///
/// ```swift
/// do { _ = try Version(parsing: "1.1a") }
/// catch let error as VersionError { print(error) }
/// // "1.1a" is not a version: 'a' at offset 3 is not allowed here. ...
/// ```
public struct VersionError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The text that failed to parse.
    public let text: String
    /// Why it failed.
    public let reason: String

    public var description: String {
        "\"\(text)\" is not a version: \(reason). Write dot-separated non-negative integers with an "
            + "optional sub-migration number, such as \"2\", \"1.2.5\" or \"1.1-2\"."
    }
}

extension Version: Comparable {
    public static func == (lhs: Version, rhs: Version) -> Bool {
        lhs.storage == rhs.storage
    }

    public static func < (lhs: Version, rhs: Version) -> Bool {
        if case let .compact(l0, l1, l2, l3, leftSub) = lhs.storage, case let .compact(r0, r1, r2, r3, rightSub) = rhs.storage {
            return (l0, l1, l2, l3, leftSub) < (r0, r1, r2, r3, rightSub)
        }
        let left = lhs.storage.digits, right = rhs.storage.digits
        for position in 0..<max(left.components.count, right.components.count) {
            let leftComponent = position < left.components.count ? left.components[position] : "0"
            let rightComponent = position < right.components.count ? right.components[position] : "0"
            if let order = compareNumbers(leftComponent, rightComponent) { return order }
        }
        switch (left.subMigration, right.subMigration) {
        case (nil, nil), (.some, nil): return false
        case (nil, .some): return true
        case let (.some(leftSub), .some(rightSub)): return compareNumbers(leftSub, rightSub) ?? false
        }
    }

    /// Compares two normalized digit strings as numbers: `true` if `left < right`, `false` if
    /// greater, `nil` if equal.
    private static func compareNumbers(_ left: String, _ right: String) -> Bool? {
        let leftDigits = left.utf8, rightDigits = right.utf8
        if leftDigits.count != rightDigits.count { return leftDigits.count < rightDigits.count }
        if leftDigits.elementsEqual(rightDigits) { return nil }
        return leftDigits.lexicographicallyPrecedes(rightDigits)
    }
}

extension Version: Hashable {
    public func hash(into hasher: inout Hasher) {
        hasher.combine(storage)
    }
}

extension Version: LosslessStringConvertible {
    /// Parses `description`, returning `nil` when it is not a version.
    public init?(_ description: String) {
        guard let version = try? Version(parsing: description) else { return nil }
        self = version
    }

    /// The version as it was written (`"1.0"` stays `"1.0"` although it equals `1`).
    public var description: String { text }
}

extension Version: ExpressibleByStringLiteral {
    /// Creates a version from a literal such as `"1.2"`.
    ///
    /// - Precondition: the literal is a valid version; a typo traps with the parse error's message.
    public init(stringLiteral value: String) {
        do {
            self = try Version(parsing: value)
        } catch {
            preconditionFailure("\(error)")
        }
    }
}

extension Version: ExpressibleByIntegerLiteral {
    /// Creates a one-component version from a literal such as `3`.
    public init(integerLiteral value: Int) {
        self.init(value)
    }
}

extension Version: Codable {
    /// Decodes a version from its text; a number is accepted as a one-component version.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let level = try? container.decode(Int.self), level >= 0 {
            self.init(level)
            return
        }
        let text = try container.decode(String.self)
        do {
            self = try Version(parsing: text)
        } catch {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "\(error)")
        }
    }

    /// Encodes the version as its text.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(text)
    }
}
