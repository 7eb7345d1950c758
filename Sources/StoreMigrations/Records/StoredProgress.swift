import Foundation

/// The resumable migrations' progress as stores keep it: a list of entries of property-list
/// objects, in a records file as they are and in the SQL stores' levels table as JSON text.
///
/// ```json
/// [{"version": "2.0", "cursor": "rowid 400000", "done": 400000, "total": 1000000,
///   "batches": 37, "elapsed": 12.5, "batchSize": 41000}]
/// ```
package enum StoredProgress {
    /// Why stored progress is malformed.
    package struct Invalid: Error, CustomStringConvertible {
        package let reason: String
        package var description: String { reason }
    }

    private enum Field {
        static let version = "version", cursor = "cursor", done = "done", total = "total"
        static let batches = "batches", elapsed = "elapsed", fingerprint = "fingerprint", batchSize = "batchSize"
    }

    /// The entries of `list`, or `nil` when it is empty (nothing is stored then).
    package static func objects(_ list: [StepProgress]) -> [[String: Any]]? {
        guard !list.isEmpty else { return nil }
        return list.map { progress in
            var entry: [String: Any] = [
                Field.version: progress.version.description, Field.cursor: progress.cursor, Field.done: progress.done,
                Field.batches: progress.batches, Field.elapsed: progress.elapsed,
            ]
            if let total = progress.total { entry[Field.total] = total }
            if let fingerprint = progress.fingerprint { entry[Field.fingerprint] = fingerprint.rawValue }
            if let batchSize = progress.batchSize { entry[Field.batchSize] = batchSize }
            return entry
        }
    }

    /// `list` as JSON text, or `nil` when it is empty.
    package static func json(_ list: [StepProgress]) -> String? {
        guard let objects = objects(list),
              let data = try? JSONSerialization.data(withJSONObject: objects, options: [.sortedKeys])
        else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    /// The progress list stored as `object` (what ``objects(_:)`` made, read back).
    package static func list(from object: Any) throws(Invalid) -> [StepProgress] {
        guard let entries = object as? [Any] else { throw Invalid(reason: "its progress is not a list") }
        var list: [StepProgress] = []
        for entryObject in entries {
            guard let entry = entryObject as? [String: Any] else { throw Invalid(reason: "a progress entry is not a dictionary") }
            guard let versionText = entry[Field.version] as? String, let version = try? Version(parsing: versionText) else {
                throw Invalid(reason: "a progress entry has no version")
            }
            guard let cursor = entry[Field.cursor] as? String,
                  let done = integer(entry[Field.done]), let batches = integer(entry[Field.batches]),
                  let elapsed = (entry[Field.elapsed] as? NSNumber)?.doubleValue
            else { throw Invalid(reason: "the progress of \(version) lacks its cursor, counts or time") }
            var fingerprint: MigrationFingerprint?
            if let stored = entry[Field.fingerprint] {
                guard let text = stored as? String, let parsed = MigrationFingerprint(stored: text) else {
                    throw Invalid(reason: "the progress of \(version) has a fingerprint that is not algorithm:digest (\(stored))")
                }
                fingerprint = parsed
            }
            list.append(StepProgress(
                version: version, cursor: cursor, done: done, total: integer(entry[Field.total]), batches: batches,
                elapsed: elapsed, fingerprint: fingerprint, batchSize: integer(entry[Field.batchSize])))
        }
        return list
    }

    /// The progress list stored as JSON `text`.
    package static func list(fromJSON text: String) throws(Invalid) -> [StepProgress] {
        guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) else {
            throw Invalid(reason: "its progress is not JSON: \(text.prefix(80))")
        }
        return try list(from: object)
    }

    /// The progress a SQL store's levels row keeps in its `progress` column, as `text` (`nil` for
    /// NULL), or `other`, the description of a value that is not text: an unreadable column is
    /// an unreadable record, never a step without progress.
    package static func list(
        column text: String?, other: String? = nil, of manager: String, store: String, table: String
    ) throws -> [StepProgress] {
        if let other {
            throw MigrationError.unreadableState(
                manager: manager, store: store, reason: "its progress in table \(table) is \(other), not text")
        }
        guard let text else { return [] }
        do {
            return try list(fromJSON: text)
        } catch {
            throw MigrationError.unreadableState(manager: manager, store: store, reason: "its progress in table \(table): \(error)")
        }
    }

    private static func integer(_ object: Any?) -> Int? {
        guard let number = object as? NSNumber else { return nil }
        return number.intValue
    }
}
