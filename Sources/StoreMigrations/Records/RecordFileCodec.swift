import Foundation

/// The managers' records as the file-backed stores keep them: a dictionary from manager name to
/// an entry of Foundation property-list objects (what `JSONSerialization` and
/// `PropertyListSerialization` both read and write), so that no store's own value type is needed:
///
/// ```json
/// {"settings": {"level": "1.2", "baseline": "1.0", "applied": ["1.1", "1.2"], "appVersion": "2.0",
///               "names": {"1.2": "split full names"}, "fingerprints": {"1.2": "v1:3f0c…"}}}
/// ```
///
/// Names and fingerprints sit beside `applied`, keyed by version, rather than in it: releases
/// before them read `applied` as a list of strings and keep fields they do not know.
///
/// `level` is written for older releases, which read only it; what an entry means (an entry
/// without `applied`, a `level` above the rest) is ``MigrationRecord/init(decoding:)``'s to say.
/// Fields this release does not know are kept as they are, so an older app never
/// erases what a newer one recorded. Every entry is validated when read: a malformed one is an
/// error, never a missing record.
struct RecordFileCodec {
    /// Why the stored records are malformed; the store wraps it in its own error naming the file.
    struct Invalid: Error {
        let manager: String?
        let reason: String
    }

    private enum Field {
        static let level = "level"
        static let baseline = "baseline"
        static let applied = "applied"
        static let appVersion = "appVersion"
        static let inProgress = "inProgress"
        static let names = "names"
        static let fingerprints = "fingerprints"
    }

    /// Every manager's entry as read, unknown fields included.
    private var entries: [String: [String: Any]]
    /// The record of every manager with an entry.
    private(set) var records: [String: MigrationRecord]

    /// No records.
    init() {
        entries = [:]
        records = [:]
    }

    /// Reads the records stored as `object`; `nil` (nothing stored) means none.
    init(_ object: Any?) throws(Invalid) {
        self.init()
        guard let object else { return }
        guard let managers = object as? [String: Any] else {
            throw Invalid(manager: nil, reason: "is \(Self.kind(of: object)), not a dictionary of managers")
        }
        for (manager, entryObject) in managers {
            guard let entry = entryObject as? [String: Any] else {
                throw Invalid(manager: manager, reason: "is \(Self.kind(of: entryObject)), not a dictionary")
            }
            entries[manager] = entry
            records[manager] = try Self.record(from: entry, of: manager)
        }
    }

    /// The records as they are stored, or `nil` when no manager has an entry.
    var object: Any? {
        entries.isEmpty ? nil : entries
    }

    /// Replaces every record with `newRecords`, keeping the fields of each entry this release
    /// does not know. Returns whether anything changed.
    @discardableResult
    mutating func update(to newRecords: [String: MigrationRecord]) -> Bool {
        guard newRecords != records else { return false }
        for manager in records.keys where newRecords[manager] == nil {
            entries[manager] = nil
        }
        for (manager, record) in newRecords where records[manager] != record {
            var entry = entries[manager] ?? [:]
            entry[Field.level] = record.level?.description
            entry[Field.baseline] = record.baseline?.description
            entry[Field.applied] = record.appliedVersions.map(\.description)
            entry[Field.appVersion] = record.appVersion?.description
            entry[Field.inProgress] = StoredProgress.objects(record.inProgress)
            entry[Field.names] = Self.byVersion(record.applied) { $0.name }
            entry[Field.fingerprints] = Self.byVersion(record.applied) { $0.fingerprint?.rawValue }
            entries[manager] = entry
        }
        records = newRecords
        return true
    }

    private static func record(from entry: [String: Any], of manager: String) throws(Invalid) -> MigrationRecord {
        var stored = StoredRecord(
            level: try version(Field.level, in: entry, of: manager),
            baseline: try version(Field.baseline, in: entry, of: manager),
            appVersion: try version(Field.appVersion, in: entry, of: manager))
        if let appliedObject = entry[Field.applied] {
            // Read element by element: a list of strings, as stores write it, holds Swift strings,
            // each known by its type (`parse(_:field:of:)`), where casting the whole list to
            // `[String]` sent every element through the runtime's general cast, three times the
            // cost. Any other element is named in the error.
            guard let objects = appliedObject as? [Any] else {
                throw Invalid(manager: manager, reason: "has an \"\(Field.applied)\" that is \(kind(of: appliedObject)), not a list of versions")
            }
            stored.applied.reserveCapacity(objects.count)
            // Each element read in place (iterating the array copied each one out, and destroyed it).
            try objects.withUnsafeBufferPointer { objects throws(Invalid) in
                for index in objects.indices {
                    stored.applied.append(AppliedMigration(version: try parse(objects[index], field: Field.applied, of: manager)))
                }
            }
        }
        if entry[Field.names] != nil || entry[Field.fingerprints] != nil {
            let names = try texts(Field.names, in: entry, of: manager)
            let fingerprints = try texts(Field.fingerprints, in: entry, of: manager)
            stored.applied = try stored.applied.map { migration throws(Invalid) in
                let key = migration.version.description
                var fingerprint: MigrationFingerprint?
                if let text = fingerprints[key] {
                    // Dropped, a damaged fingerprint would read as "never recorded" and hide an edit.
                    guard let parsed = MigrationFingerprint(stored: text) else {
                        throw Invalid(
                            manager: manager,
                            reason: "has a fingerprint of \(key) that is not algorithm:digest (\(text.debugDescription))")
                    }
                    fingerprint = parsed
                }
                return AppliedMigration(version: migration.version, name: names[key], fingerprint: fingerprint)
            }
        }
        if let progress = entry[Field.inProgress] {
            do {
                stored.inProgress = try StoredProgress.list(from: progress)
            } catch {
                throw Invalid(manager: manager, reason: "has an \"\(Field.inProgress)\" that is malformed: \(error.reason)")
            }
        }
        return MigrationRecord(decoding: stored)
    }

    /// A field of texts keyed by version (`names`, `fingerprints`), or nil when none has one.
    private static func byVersion(_ applied: [AppliedMigration], _ text: (AppliedMigration) -> String?) -> [String: String]? {
        var texts: [String: String] = [:]
        for migration in applied { if let value = text(migration) { texts[migration.version.description] = value } }
        return texts.isEmpty ? nil : texts
    }

    private static func texts(_ field: String, in entry: [String: Any], of manager: String) throws(Invalid) -> [String: String] {
        guard let object = entry[field] else { return [:] }
        guard let texts = object as? [String: String] else {
            throw Invalid(manager: manager, reason: "has a \"\(field)\" that is \(kind(of: object)), not a dictionary of texts by version")
        }
        return texts
    }

    private static func version(_ field: String, in entry: [String: Any], of manager: String) throws(Invalid) -> Version? {
        guard let object = entry[field] else { return nil }
        return try parse(object, field: field, of: manager)
    }

    private static func parse(_ object: Any, field: String, of manager: String) throws(Invalid) -> Version {
        // A Swift string, what JSONSerialization and the preferences' conversion give, is known
        // by its type alone: the casts below cost a launch dearly for every applied version
        // (asking whether a string is an NSNumber tries to bridge it).
        if let text = swiftString(object) {
            return try parse(text: text, field: field, of: manager)
        }
        guard let text = object as? String, !(object is NSNumber) else {
            throw Invalid(manager: manager, reason: "has a \"\(field)\" that is \(kind(of: object)), not a version string")
        }
        return try parse(text: text, field: field, of: manager)
    }

    /// The Swift string `object` holds, known by its type alone, without the runtime's general
    /// cast (a call of about 200 instructions); `nil` for anything else, an `NSString` included.
    private static func swiftString(_ object: Any) -> String? {
        func string<T>(_ value: T) -> String? {
            T.self == String.self ? unsafeBitCast(value, to: String.self) : nil
        }
        return _openExistential(object, do: string)
    }

    private static func parse(text: String, field: String, of manager: String) throws(Invalid) -> Version {
        do {
            return try Version(parsing: text)
        } catch {
            throw Invalid(manager: manager, reason: "has a \"\(field)\" that is not a version: \(error)")
        }
    }

    /// The kind of a property-list object with its article, for messages.
    static func kind(of object: Any) -> String {
        switch object {
        case is NSNumber: return "a number"
        case is String: return "a string"
        case is [Any]: return "an array"
        case is [String: Any]: return "a dictionary"
        case is Date: return "a date"
        case is Data: return "data"
        default: return "a \(type(of: object))"
        }
    }
}
