/// `Version(parsing:)` against a reference written apart from it: the grammar `N(.N)*(-S)?` and
/// numeric ordering over decimal digit strings of any length. The input holds two texts, split
/// at its first newline, so that the ordering of every pair the fuzzer makes up is checked too,
/// across the compact and the general representation.
enum VersionFuzz {
    static func run(_ input: UnsafeRawBufferPointer) {
        let newline = input.firstIndex(of: 0x0A)
        let first = check(String(decoding: input[..<(newline ?? input.endIndex)], as: UTF8.self))
        guard let newline else { return }
        let second = check(String(decoding: input[(newline + 1)...], as: UTF8.self))
        if let (left, leftReference) = first, let (right, rightReference) = second {
            let expected = leftReference.compare(rightReference)
            require(
                (left < right, left == right, left > right) == (expected < 0, expected == 0, expected > 0),
                "\(left) vs \(right): the order differs from the reference (\(expected))")
            require(left != right || left.hashValue == right.hashValue, "\(left) == \(right) but their hashes differ")
        }
    }

    /// Parses `text`; the version and its reference when it is one.
    static func check(_ text: String) -> (Version, ReferenceVersion)? {
        let reference = ReferenceVersion(text)
        let version: Version
        do {
            version = try Version(parsing: text)
        } catch let error as VersionError {
            require(reference == nil, "\(text.debugDescription) is a version but was rejected: \(error)")
            require(error.text == text, "the error quotes \(error.text.debugDescription), not \(text.debugDescription)")
            require(Version(text) == nil, "init?(_:) accepts \(text.debugDescription), which init(parsing:) rejects")
            return nil
        } catch {
            fatalError("\(text.debugDescription) threw \(type(of: error)), not a VersionError")
        }
        guard let reference else { fatalError("\(text.debugDescription) is not a version but parsed as \(version)") }
        require(version.description == text, "\(text.debugDescription) reads back as \(version.description.debugDescription)")
        require(version.isSubMigration == (reference.subMigration != nil), "\(text.debugDescription): isSubMigration")

        // The normalized spelling is the same version, whichever representation each one takes.
        let normalized = try! Version(parsing: reference.normalizedText)
        require(normalized == version && !(normalized < version) && !(version < normalized),
                "\(text.debugDescription) differs from its normalized form \(reference.normalizedText)")
        require(normalized.hashValue == version.hashValue, "\(text.debugDescription) hashes apart from \(reference.normalizedText)")
        require(normalized.description == reference.normalizedText, "\(reference.normalizedText) reads back as \(normalized)")

        let base = version.base
        require(!base.isSubMigration, "the base of \(text.debugDescription) is a sub-migration")
        if reference.subMigration == nil {
            require(base == version, "\(text.debugDescription) is not its own base")
        } else {
            require(base < version, "the base of \(text.debugDescription) is not before it")
            let baseText = String(text[..<text.lastIndex(of: "-")!])
            require(base == (try! Version(parsing: baseText)), "the base of \(text.debugDescription) is not \(baseText)")
        }
        if reference.components.count <= 1, reference.subMigration == nil, let level = Int(text) {
            require(Version(level) == version, "Version(\(level)) differs from \(text.debugDescription)")
        }
        return (version, reference)
    }
}

/// A version as the grammar defines it: components and sub-migration number as decimal digit
/// strings without leading zeros (zero is the empty string), trailing zero components dropped.
struct ReferenceVersion: Equatable {
    let components: [String]
    let subMigration: String?

    init?(_ text: String) {
        func number(_ part: Substring) -> String? {
            guard !part.isEmpty, part.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else {
                return nil
            }
            return String(part.drop { $0 == "0" })
        }
        let halves = text.split(separator: "-", omittingEmptySubsequences: false)
        guard halves.count <= 2 else { return nil }
        var components: [String] = []
        for part in halves[0].split(separator: ".", omittingEmptySubsequences: false) {
            guard let component = number(part) else { return nil }
            components.append(component)
        }
        while components.last == "" { components.removeLast() }
        self.components = components
        if halves.count == 2 {
            guard let subMigration = number(halves[1]) else { return nil }
            self.subMigration = subMigration
        } else {
            subMigration = nil
        }
    }

    var normalizedText: String {
        func digits(_ number: String) -> String { number.isEmpty ? "0" : number }
        let components = self.components.isEmpty ? "0" : self.components.map(digits).joined(separator: ".")
        return components + (subMigration.map { "-" + digits($0) } ?? "")
    }

    /// Negative, zero or positive as `self` is before, equal to or after `other`.
    func compare(_ other: ReferenceVersion) -> Int {
        func compareNumbers(_ left: String, _ right: String) -> Int {
            if left.utf8.count != right.utf8.count { return left.utf8.count < right.utf8.count ? -1 : 1 }
            return left == right ? 0 : (left < right ? -1 : 1)
        }
        for index in 0..<max(components.count, other.components.count) {
            let order = compareNumbers(
                index < components.count ? components[index] : "",
                index < other.components.count ? other.components[index] : "")
            if order != 0 { return order }
        }
        switch (subMigration, other.subMigration) {
        case (nil, nil): return 0
        case (nil, _): return -1
        case (_, nil): return 1
        case let (left?, right?): return compareNumbers(left, right)
        }
    }
}
