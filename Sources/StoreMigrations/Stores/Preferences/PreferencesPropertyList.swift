import Foundation

/// Reads and writes ``Preferences`` as a property list through `PropertyListSerialization`.
///
/// Reading accepts binary and XML property lists (not OpenStep text, which Foundation cannot
/// write) and tells which it read, so that a store writes
/// a file back in the format it was read in; a new file is binary, the format `UserDefaults`
/// writes on Apple platforms, which keeps dates to the full precision of `Date` (XML keeps whole
/// seconds only). Property lists have no null: writing ``PreferenceValue/null`` throws
/// ``NullValue`` naming its key.
enum PreferencesPropertyList {
    /// A ``PreferenceValue/null`` met while writing a property list, at `path`.
    struct NullValue: Error, Equatable {
        let path: PreferenceKeyPath
    }

    static func decode(_ data: Data) throws -> [String: PreferenceValue] {
        try decodeKeepingFormat(data).values
    }

    /// The values in `data` and the format they were written in (binary or XML).
    static func decodeKeepingFormat(_ data: Data) throws -> (values: [String: PreferenceValue], format: PropertyListSerialization.PropertyListFormat) {
        try rejectSets(in: data)
        let object: Any
        var format = PropertyListSerialization.PropertyListFormat.binary
        do {
            object = try PropertyListSerialization.propertyList(from: data, options: [], format: &format)
        } catch {
            let nsError = error as NSError
            let detail = nsError.userInfo[NSDebugDescriptionErrorKey] as? String ?? nsError.localizedDescription
            throw PreferencesFormatError(reason: data.isEmpty ? "the file is empty" : detail)
        }
        // Foundation reads OpenStep text (white space alone is an empty one) but cannot write it:
        // a store that read one would trap writing it back.
        guard format != .openStep else {
            let blank = data.allSatisfy { $0 == 0x20 || (0x09...0x0D).contains($0) }
            throw PreferencesFormatError(
                reason: blank
                    ? "the file holds only white space"
                    : "the file is an OpenStep text property list, which cannot be written back; convert it to XML first (plutil -convert xml1)")
        }
        guard case .dictionary(let values) = try value(from: object, path: []) else {
            throw PreferencesFormatError(reason: "the top level is not a dictionary")
        }
        return (values, format)
    }

    /// Refuses a binary property list holding a set (object marker `0xCn`), which preferences
    /// cannot hold and which swift-corelibs-foundation's `PropertyListSerialization` can crash
    /// on while bridging it (a damaged file of 76 bytes was enough).
    ///
    /// Only the object table is read: a trailer or offset table out of bounds is left for
    /// `PropertyListSerialization` to reject.
    private static func rejectSets(in data: Data) throws {
        let bytes = [UInt8](data)
        let trailerSize = 32
        guard bytes.starts(with: Array("bplist".utf8)), bytes.count >= 8 + trailerSize else { return }
        let trailer = bytes.count - trailerSize
        func integer(at offset: Int, size: Int) -> Int? {
            guard size >= 1, size <= 8, offset >= 0, offset + size <= bytes.count else { return nil }
            let value = bytes[offset..<(offset + size)].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            return value <= UInt64(bytes.count) ? Int(value) : nil
        }
        let offsetSize = Int(bytes[trailer + 6])
        guard let count = integer(at: trailer + 8, size: 8), let table = integer(at: trailer + 24, size: 8),
              offsetSize >= 1, offsetSize <= 8, table + count * offsetSize <= trailer
        else { return }
        for object in 0..<count {
            guard let offset = integer(at: table + object * offsetSize, size: offsetSize), offset < trailer else { continue }
            if bytes[offset] >> 4 == 0xC {
                throw PreferencesFormatError(
                    reason: "the property list holds a set (object \(object) at byte \(offset)), which preferences cannot hold")
            }
        }
    }

    static func encode(_ values: [String: PreferenceValue]) throws -> Data {
        try encode(values, format: .binary)
    }

    /// `values` as a property list in `format` (binary or XML).
    ///
    /// - Throws: ``NullValue`` for a null anywhere in `values`, ``PreferencesFormatError`` when
    ///   `PropertyListSerialization` refuses.
    static func encode(_ values: [String: PreferenceValue], format: PropertyListSerialization.PropertyListFormat) throws -> Data {
        let root = try object(from: .dictionary(values), at: [])
        do {
            return try PropertyListSerialization.data(fromPropertyList: root, format: format, options: 0)
        } catch {
            throw PreferencesFormatError(reason: (error as NSError).localizedDescription)
        }
    }

    /// The value of a property-list object, such as the records a ``RecordFileCodec`` writes.
    static func value(from object: Any) throws -> PreferenceValue {
        try value(from: object, path: [])
    }

    /// The value of the property-list object found at `path`, which error messages name.
    static func value(from object: Any, at path: [String]) throws -> PreferenceValue {
        try value(from: object, path: path)
    }

    /// `object` without the `Optional` wrappers Linux's Foundation puts around the values of a
    /// `UserDefaults` domain (at every level), or `nil` for an empty one.
    static func unwrapped(_ object: Any) -> Any? {
        var object = object
        while let wrapper = object as? any OptionalWrapper {
            guard let wrapped = wrapper.wrappedObject else { return nil }
            object = wrapped
        }
        switch object {
        case is NSNumber, is String, is Date, is Data: return object
        case let array as [Any]: return array.compactMap(unwrapped)
        case let dictionary as [AnyHashable: Any]:
            var result: [String: Any] = [:]
            for (key, element) in dictionary {
                guard let key = key.base as? String else { return object }
                result[key] = unwrapped(element)
            }
            return result
        default: return object
        }
    }

    private static func value(from object: Any, path: [String]) throws -> PreferenceValue {
        // Checked first: on Linux a Bool or an NSNumber also casts to the other.
        if let number = object as? NSNumber {
            return try value(from: number, path: path)
        }
        switch object {
        case let string as String:
            return .string(string)
        case let date as Date:
            return .date(date)
        case let data as Data:
            return .data(data)
        case let array as [Any]:
            return .array(try array.enumerated().map { try value(from: $1, path: path + ["[\($0)]"]) })
        case let dictionary as [String: Any]:
            var values: [String: PreferenceValue] = [:]
            for (key, element) in dictionary {
                values[key] = try value(from: element, path: path + [key])
            }
            return .dictionary(values)
        default:
            throw PreferencesFormatError(
                reason: "the value at \"\(describe(path))\" is a \(type(of: object)), which preferences "
                    + "cannot hold")
        }
    }

    private static func value(from number: NSNumber, path: [String]) throws -> PreferenceValue {
        // Property lists produce booleans as 'c' (char) numbers and reals as 'd' or 'f';
        // every other type code is an integer.
        switch UInt8(bitPattern: number.objCType.pointee) {
        case UInt8(ascii: "c"), UInt8(ascii: "B"):
            return .bool(number.boolValue)
        case UInt8(ascii: "d"), UInt8(ascii: "f"):
            return .double(number.doubleValue)
        case UInt8(ascii: "Q"), UInt8(ascii: "L"), UInt8(ascii: "I"):
            guard let value = Int(exactly: number.uint64Value) else {
                throw PreferencesFormatError(
                    reason: "the integer at \"\(describe(path))\" (\(number.uint64Value)) does not fit "
                        + "in a signed 64-bit integer")
            }
            return .int(value)
        default:
            return .int(number.intValue)
        }
    }

    /// The property-list object for `value`.
    ///
    /// - Throws: ``NullValue`` naming the first null's path (below `path`).
    static func object(from value: PreferenceValue, at path: [String] = []) throws(NullValue) -> Any {
        switch value {
        case .string(let string): return string
        case .int(let int): return int
        case .double(let double): return double
        case .bool(let bool): return bool
        case .date(let date): return date
        case .data(let data): return data
        case .null:
            throw NullValue(path: PreferenceKeyPath(path.isEmpty ? ["(top level)"] : path))
        case .array(let elements):
            var objects: [Any] = []
            objects.reserveCapacity(elements.count)
            for (index, element) in elements.enumerated() {
                objects.append(try object(from: element, at: path + ["[\(index)]"]))
            }
            return objects
        case .dictionary(let dictionary):
            var objects: [String: Any] = [:]
            objects.reserveCapacity(dictionary.count)
            for (key, element) in dictionary {
                objects[key] = try object(from: element, at: path + [key])
            }
            return objects
        }
    }

    private static func describe(_ path: [String]) -> String {
        path.isEmpty ? "(top level)" : PreferenceKeyPath(path).description
    }
}

/// Lets ``PreferencesPropertyList/unwrapped(_:)`` see through an `Optional` held in an `Any`.
private protocol OptionalWrapper {
    var wrappedObject: Any? { get }
}

extension Optional: OptionalWrapper {
    fileprivate var wrappedObject: Any? { map { $0 as Any } }
}
