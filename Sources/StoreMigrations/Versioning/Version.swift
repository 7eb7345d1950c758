import Foundation

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
///
/// A string literal that is not a version, such as `"v2"`, never traps: it makes a version that
/// is not ``isValid``, which the coordinator refuses with
/// ``MigrationError/invalidVersion(text:reason:manager:)`` before anything runs. Swift reads
/// `Version("v2")` as that literal too, so text read at run time goes through
/// ``init(parsing:)``, or `Version(text)` given a `String` value, which returns `nil`.
public struct Version: Sendable {
    // The normalized value (trailing zero components removed, leading zeros dropped, so that
    // equal versions have equal values) is held inline when it is compact: up to four components
    // (missing ones are zero) and a sub-migration number that each fit in 32 bits, the common
    // case. Everything else (the digits of a larger version, text written other than normalized,
    // such as `1.0` or `007`) is kept once in a table for the process, and the version holds its
    // number there. A version is thus plain integers: copying or destroying one, or an array of
    // records holding them, retains and releases nothing, because plans, records and graphs copy
    // versions by the hundred thousand.
    private let c0: UInt32, c1: UInt32, c2: UInt32, c3: UInt32
    /// 0 for no sub-migration, `S + 1` for `-S`, or ``Version/notCompact``.
    private let sub: UInt64
    /// 0 for a compact version written normalized; otherwise 1 + the index of its ``Details`` in
    /// ``Version/table``.
    private let detailsNumber: UInt32

    /// `sub` of a version whose value is in its details' digits, or of a literal that is not a
    /// version (details without digits); its components are all zero.
    private static let notCompact = UInt64.max

    private struct Details: Hashable, Sendable {
        /// For a version that is not compact: decimal digit strings without leading zeros, the
        /// components (at least one, the last not zero unless it is the only one) and the
        /// sub-migration number.
        let components: [String]?
        let subMigration: String?
        /// The text the version was written as, when it is not the normalized form.
        let text: String?

        init(digits: (components: [String], subMigration: String?)?, text: String?) {
            self.components = digits?.components
            self.subMigration = digits?.subMigration
            self.text = text
        }

        var digits: (components: [String], subMigration: String?)? {
            components.map { ($0, subMigration) }
        }
    }

    /// Every distinct ``Details`` the process has made, each once: the table only grows, by as
    /// many entries as there are distinct texts written other than normalized and versions too
    /// large to be compact, a handful in an app.
    private final class DetailsTable: @unchecked Sendable {
        // @unchecked: `entries` and `numbers` are only touched with `lock` held.
        private let lock = NSLock()
        private var entries: [Details] = []
        private var numbers: [Details: UInt32] = [:]

        func number(of details: Details) -> UInt32 {
            lock.withLock {
                if let number = numbers[details] { return number }
                entries.append(details)
                let number = UInt32(entries.count)
                numbers[details] = number
                return number
            }
        }

        func details(_ number: UInt32) -> Details {
            lock.withLock { entries[Int(number) - 1] }
        }
    }

    private static let table = DetailsTable()

    private var details: Details? {
        detailsNumber == 0 ? nil : Self.table.details(detailsNumber)
    }

    private init(_ c0: UInt32, _ c1: UInt32, _ c2: UInt32, _ c3: UInt32, sub: UInt64, details: Details?) {
        (self.c0, self.c1, self.c2, self.c3, self.sub) = (c0, c1, c2, c3, sub)
        self.detailsNumber = details.map(Self.table.number(of:)) ?? 0
    }

    /// The version of `components` and `subMigration` (digit strings without leading zeros),
    /// normalized, compact when it fits; `text` is kept when it is not the normalized form.
    private init(components: [String], subMigration: String?, text: String?) {
        var components = components
        while components.count > 1, components.last == "0" { components.removeLast() }
        if components.count <= 4, let numbers = Self.compactNumbers(components),
           subMigration.map({ UInt32($0) != nil }) ?? true {
            let sub = subMigration.flatMap { UInt32($0) }.map { UInt64($0) + 1 } ?? 0
            let normalized = Version(numbers[0], numbers[1], numbers[2], numbers[3], sub: sub, details: nil)
            self.init(
                numbers[0], numbers[1], numbers[2], numbers[3], sub: sub,
                details: text.flatMap { $0 == normalized.description ? nil : Details(digits: nil, text: $0) })
        } else {
            let normalized = Self.text(of: (components, subMigration))
            self.init(0, 0, 0, 0, sub: Self.notCompact, details: Details(
                digits: (components, subMigration), text: text.flatMap { $0 == normalized ? nil : $0 }))
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

    private var isCompact: Bool { sub != Self.notCompact }

    /// Whether the version parsed: `false` only for a string literal that is not a version.
    public var isValid: Bool { isCompact || details?.digits != nil }

    /// The text of a literal that is not a version; `nil` for every valid version.
    private var invalidText: String? {
        guard !isCompact, let details, details.digits == nil else { return nil }
        return details.text
    }

    /// Why the literal is not a version; `nil` for a valid version.
    var parseError: VersionError? {
        guard let text = invalidText else { return nil }
        do {
            _ = try Version(parsing: text)
            return nil
        } catch let error as VersionError {
            return error
        } catch {
            return VersionError(text: text, reason: "\(error)")
        }
    }

    /// The digit strings of the components (at least one) and of the sub-migration number.
    private var digits: (components: [String], subMigration: String?) {
        if !isCompact, let digits = details?.digits { return digits }
        var components = [c0, c1, c2, c3].map { String($0) }
        while components.count > 1, components.last == "0" { components.removeLast() }
        return (components, sub == 0 ? nil : String(sub - 1))
    }

    private static func text(of digits: (components: [String], subMigration: String?)) -> String {
        digits.components.joined(separator: ".") + (digits.subMigration.map { "-" + $0 } ?? "")
    }

    /// Parses `text` in the grammar `N(.N)*(-S)?`.
    ///
    /// - Throws: ``VersionError`` quoting the text when it is not a version.
    public init(parsing text: String) throws {
        if let version = Self.compact(parsing: text) {
            self = version
            return
        }
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
        self.init(components: components, subMigration: subMigration, text: text)
    }

    /// The compact version `text` spells, read in one pass over its bytes without the digit
    /// strings the general parser builds: a launch parses every applied version of every store.
    /// `nil` for anything else (invalid text, more than four components, numbers past 32 bits),
    /// which the general parser then reads or rejects.
    private static func compact(parsing text: String) -> Version? {
        var numbers: (UInt32, UInt32, UInt32, UInt32) = (0, 0, 0, 0)
        var componentCount = 0
        var lastComponent: UInt32 = 0
        var current: UInt32 = 0
        var digitCount = 0
        var inSubMigration = false
        // Whether `text` is the normalized form, which then need not be kept: no number with a
        // leading zero, and a last component that is not zero unless it is the only one.
        var isNormalized = true
        // Stores the number just read as component `componentCount`; false past four components
        // (unless the extra ones are zeros, which normalization drops) or for an empty number.
        func endComponent() -> Bool {
            guard digitCount > 0 else { return false }
            switch componentCount {
            case 0: numbers.0 = current
            case 1: numbers.1 = current
            case 2: numbers.2 = current
            case 3: numbers.3 = current
            default: guard current == 0 else { return false }
            }
            componentCount += 1
            lastComponent = current
            current = 0
            digitCount = 0
            return true
        }
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                if digitCount > 0, current == 0 { isNormalized = false }
                let (times10, overflow) = current.multipliedReportingOverflow(by: 10)
                let (sum, carry) = times10.addingReportingOverflow(UInt32(byte &- UInt8(ascii: "0")))
                guard !overflow, !carry else { return nil }
                current = sum
                digitCount += 1
            case UInt8(ascii: "."):
                guard !inSubMigration, endComponent() else { return nil }
            case UInt8(ascii: "-"):
                guard !inSubMigration, endComponent() else { return nil }
                inSubMigration = true
            default:
                return nil
            }
        }
        var sub: UInt64 = 0
        if inSubMigration {
            guard digitCount > 0 else { return nil }
            sub = UInt64(current) + 1
        } else {
            guard endComponent() else { return nil }
        }
        if componentCount > 1, lastComponent == 0 { isNormalized = false }
        return Version(
            numbers.0, numbers.1, numbers.2, numbers.3, sub: sub,
            details: isNormalized ? nil : Details(digits: nil, text: text))
    }

    private static func reason(at index: Int, in utf8: [UInt8]) -> String {
        if utf8.isEmpty { return "it is empty" }
        if index >= utf8.count { return "it ends where a number is expected" }
        // Escaped, so that a newline or a tab read from a file shows as \n or \t.
        let character = String(decoding: [utf8[index]], as: UTF8.self)
            .unicodeScalars.map { $0.escaped(asASCII: false) }.joined()
        return "'\(character)' at offset \(index) is not allowed here"
    }

    /// Creates a one-component version, like the compatibility levels `1`, `2`, `3`.
    ///
    /// - Precondition: `level` is not negative.
    public init(_ level: Int) {
        precondition(level >= 0, "Version \(level) is negative; versions are non-negative integers")
        if let compact = UInt32(exactly: level) {
            self.init(compact, 0, 0, 0, sub: 0, details: nil)
        } else {
            self.init(0, 0, 0, 0, sub: Self.notCompact, details: Details(digits: ([String(level)], nil), text: nil))
        }
    }

    /// This version without its sub-migration number: `1.1` for `1.1-2`.
    public var base: Version {
        guard isSubMigration else { return self }
        guard isCompact else {
            // Without its sub-migration number, a version may fit the compact form again.
            return Version(components: digits.components, subMigration: nil, text: nil)
        }
        return Version(c0, c1, c2, c3, sub: 0, details: nil)
    }

    /// Whether the version names a sub-migration (`1.1-2`).
    public var isSubMigration: Bool {
        isCompact ? sub != 0 : details?.digits?.subMigration != nil
    }
}

/// The error thrown when text is not a valid ``Version``.
///
/// ```swift
/// do { _ = try Version(parsing: "1.1a") }
/// catch let error as VersionError { print(error) }
/// // "1.1a" is not a version: 'a' at offset 3 is not allowed here. ...
/// ```
public struct VersionError: Error, Sendable, Hashable, CustomStringConvertible, LocalizedError {
    /// The text that failed to parse.
    public let text: String
    /// Why it failed.
    public let reason: String

    public var description: String {
        // Quoted as a Swift literal: a newline or a tab read from a file would otherwise break
        // the message, or hide inside it as invisible text.
        "\(text.debugDescription) is not a version: \(reason). Write dot-separated non-negative "
            + "integers with an optional sub-migration number, such as \"2\", \"1.2.5\" or \"1.1-2\"."
    }

    public var errorDescription: String? { description }
}

extension Version: Comparable {
    // Both comparisons are inlined into the module's loops over versions: a call would make the
    // caller copy (and retain) each version it reads out of an array, to keep it alive across
    // the call. Versions that are not compact take a call.

    @inline(__always)
    public static func == (lhs: Version, rhs: Version) -> Bool {
        // Normalized values are equal when their fields are; a version that is not compact never
        // equals a compact one (its `sub` is `notCompact`), and compares by digits otherwise.
        guard lhs.c0 == rhs.c0, lhs.c1 == rhs.c1, lhs.c2 == rhs.c2, lhs.c3 == rhs.c3, lhs.sub == rhs.sub else { return false }
        return lhs.isCompact || digitsEqual(lhs, rhs)
    }

    private static func digitsEqual(_ lhs: Version, _ rhs: Version) -> Bool {
        let left = lhs.invalidText, right = rhs.invalidText
        if left != nil || right != nil { return left == right }
        return lhs.digits == rhs.digits
    }

    @inline(__always)
    public static func < (lhs: Version, rhs: Version) -> Bool {
        if lhs.isCompact, rhs.isCompact {
            return (lhs.c0, lhs.c1, lhs.c2, lhs.c3, lhs.sub) < (rhs.c0, rhs.c1, rhs.c2, rhs.c3, rhs.sub)
        }
        return precedesByDigits(lhs, rhs)
    }

    private static func precedesByDigits(_ lhs: Version, _ rhs: Version) -> Bool {
        // Literals that are not versions sort first, by their text: registered, they are the
        // first of their manager's versions, where the graph looks for them.
        switch (lhs.invalidText, rhs.invalidText) {
        case let (left?, right?): return left < right
        case (.some, nil): return true
        case (nil, .some): return false
        case (nil, nil): break
        }
        let left = lhs.digits, right = rhs.digits
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
        if isCompact {
            hasher.combine(c0)
            hasher.combine(c1)
            hasher.combine(c2)
            hasher.combine(c3)
            hasher.combine(sub)
        } else if let text = invalidText {
            hasher.combine(text)
        } else {
            let digits = self.digits
            hasher.combine(digits.components)
            hasher.combine(digits.subMigration)
        }
    }
}

extension Version: LosslessStringConvertible {
    /// Parses `description`, returning `nil` when it is not a version.
    public init?(_ description: String) {
        guard let version = try? Version(parsing: description) else { return nil }
        self = version
    }

    /// The version as it was written (`"1.0"` stays `"1.0"` although it equals `1`).
    public var description: String {
        if let text = details?.text { return text }
        guard isCompact else { return Self.text(of: digits) }
        // Written normalized: the numbers say it all. Component by component, with no array of
        // them: a creation from the declared schema writes hundreds of versions into its history.
        var text = String(c0)
        let count = c3 != 0 ? 4 : c2 != 0 ? 3 : c1 != 0 ? 2 : 1
        if count > 1 { text += "." + String(c1) }
        if count > 2 { text += "." + String(c2) }
        if count > 3 { text += "." + String(c3) }
        if sub != 0 { text += "-" + String(sub - 1) }
        return text
    }
}

extension Version: ExpressibleByStringLiteral {
    /// Creates a version from a literal such as `"1.2"`.
    ///
    /// A literal that is not a version (`"v2"`, `"1.x"`) makes a version that is not
    /// ``isValid`` rather than trapping: a typo in a literal would otherwise crash the app at
    /// launch, and `Version("v2")` is this literal too. The coordinator refuses such a version,
    /// naming it, before anything runs.
    public init(stringLiteral value: String) {
        if let version = try? Version(parsing: value) {
            self = version
        } else {
            self.init(0, 0, 0, 0, sub: Self.notCompact, details: Details(digits: nil, text: value))
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
        try container.encode(description)
    }
}

/// A dictionary keyed by versions (``MigrationPlan/Manager/lateNames``) is coded as an object
/// whose keys are the versions' texts, as the versions themselves are.
extension Version: CodingKeyRepresentable {
    public var codingKey: any CodingKey { VersionKey(stringValue: description) }

    public init?<Key: CodingKey>(codingKey: Key) {
        guard let version = try? Version(parsing: codingKey.stringValue) else { return nil }
        self = version
    }

    private struct VersionKey: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }

        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
