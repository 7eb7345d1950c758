#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif
import Foundation
import StoreMigrations

extension Database {
    /// Registers a SQL function on this connection, for SQL that runs on it: in the store's
    /// `configure` closure, so that every step can use it, or in one body.
    ///
    /// ```swift
    /// let store = SQLiteStore(url: databaseURL) { db in
    ///     try db.createFunction("slug", argumentCount: 1) { arguments in
    ///         guard case let .text(title) = arguments[0] else { return .null }
    ///         return .text(title.lowercased().replacingOccurrences(of: " ", with: "-"))
    ///     }
    /// }
    /// // in a migration body:
    /// try db.execute("UPDATE note SET slug = slug(title)")
    /// ```
    ///
    /// - Parameters:
    ///   - name: The function's name in SQL.
    ///   - argumentCount: How many arguments it takes, or -1 for any number.
    ///   - deterministic: Whether it always returns the same result for the same arguments,
    ///     which lets SQLite use it in indexes and `CHECK` constraints.
    ///   - function: The function; an error it throws fails the statement with its description.
    public func createFunction(
        _ name: String, argumentCount: Int32, deterministic: Bool = true,
        _ function: @escaping ([DatabaseValue]) throws -> DatabaseValue
    ) throws {
        let box = Unmanaged.passRetained(FunctionBox(function)).toOpaque()
        let flags = SQLITE_UTF8 | (deterministic ? SQLITE_DETERMINISTIC : 0)
        let status = sqlite3_create_function_v2(
            handle, name, argumentCount, flags, box,
            { context, count, values in
                let box = Unmanaged<FunctionBox>.fromOpaque(sqlite3_user_data(context)).takeUnretainedValue()
                let arguments = (0..<Int(count)).map { DatabaseValue(sqliteValue: values?[$0]) }
                do {
                    switch try box.function(arguments) {
                    case .null: sqlite3_result_null(context)
                    case let .integer(value): sqlite3_result_int64(context, value)
                    case let .real(value): sqlite3_result_double(context, value)
                    case let .text(value): sqlite3_result_text(context, value, -1, Database.transientDestructor)
                    case let .blob(value):
                        value.withUnsafeBytes {
                            sqlite3_result_blob(context, $0.baseAddress, Int32($0.count), Database.transientDestructor)
                        }
                    }
                } catch {
                    sqlite3_result_error(context, "\(error)", -1)
                }
            },
            nil, nil,
            { box in box.map { Unmanaged<FunctionBox>.fromOpaque($0).release() } })
        guard status == SQLITE_OK else { throw self.error(status, sql: nil) }
    }

    /// Tells SQLite to copy a result, since Swift frees its buffer after the call.
    fileprivate static var transientDestructor: sqlite3_destructor_type {
        unsafeBitCast(-1 as Int, to: sqlite3_destructor_type.self)
    }
}

/// A function registered with ``Database/createFunction(_:argumentCount:deterministic:_:)``, kept
/// alive by SQLite until the function is replaced or the connection closes.
private final class FunctionBox {
    let function: ([DatabaseValue]) throws -> DatabaseValue

    init(_ function: @escaping ([DatabaseValue]) throws -> DatabaseValue) {
        self.function = function
    }
}

extension DatabaseValue {
    /// The value of a SQL function's argument.
    fileprivate init(sqliteValue value: OpaquePointer?) {
        switch sqlite3_value_type(value) {
        case SQLITE_INTEGER: self = .integer(sqlite3_value_int64(value))
        case SQLITE_FLOAT: self = .real(sqlite3_value_double(value))
        case SQLITE_TEXT:
            guard let text = sqlite3_value_text(value) else { self = .text(""); return }
            let count = Int(sqlite3_value_bytes(value))
            self = .text(String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self))
        case SQLITE_BLOB:
            guard let bytes = sqlite3_value_blob(value) else { self = .blob(Data()); return }
            self = .blob(Data(bytes: bytes, count: Int(sqlite3_value_bytes(value))))
        default: self = .null
        }
    }
}
