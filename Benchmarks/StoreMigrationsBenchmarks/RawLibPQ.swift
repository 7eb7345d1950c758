#if canImport(CLibPQ)
import CLibPQ
import Foundation

/// The PostgreSQL baselines' way to the server: libpq's C API and nothing else.
final class RawLibPQ {
    let handle: OpaquePointer

    init(_ connectionString: String) throws {
        guard let handle = PQconnectdb(connectionString) else { throw RawLibPQError("libpq could not allocate a connection") }
        guard PQstatus(handle) == CONNECTION_OK else {
            defer { PQfinish(handle) }
            throw RawLibPQError("could not connect with \(connectionString): \(String(cString: PQerrorMessage(handle)))")
        }
        self.handle = handle
    }

    deinit { PQfinish(handle) }

    func execute(_ sql: String) throws {
        let result = PQexec(handle, sql)
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            throw RawLibPQError("\(sql): \(String(cString: PQerrorMessage(handle)))")
        }
    }

    /// The rows of the last statement of `sql`, as text.
    func rows(_ sql: String) throws -> [[String?]] {
        let result = PQexec(handle, sql)
        defer { PQclear(result) }
        guard PQresultStatus(result) == PGRES_TUPLES_OK else { throw RawLibPQError("\(sql): \(String(cString: PQerrorMessage(handle)))") }
        return (0..<PQntuples(result)).map { row in
            (0..<PQnfields(result)).map { column in
                PQgetisnull(result, row, column) == 1 ? nil : String(cString: PQgetvalue(result, row, column))
            }
        }
    }

    /// The rows of a statement with text parameters, as text (one round trip, as `PQexecParams` makes it).
    func rows(_ sql: String, parameters: [String]) throws -> [[String?]] {
        let copies = parameters.map { strdup($0) }
        defer { copies.forEach { free($0) } }
        let values = copies.map { UnsafePointer($0) }
        let result = values.withUnsafeBufferPointer { PQexecParams(handle, sql, Int32(parameters.count), nil, $0.baseAddress, nil, nil, 0) }
        defer { PQclear(result) }
        guard PQresultStatus(result) == PGRES_TUPLES_OK else { throw RawLibPQError("\(sql): \(String(cString: PQerrorMessage(handle)))") }
        return (0..<PQntuples(result)).map { row in
            (0..<PQnfields(result)).map { column in
                PQgetisnull(result, row, column) == 1 ? nil : String(cString: PQgetvalue(result, row, column))
            }
        }
    }

    /// Sends several statements in one round trip and reads each one's rows, as text.
    func rowsOfEach(_ sql: String) throws -> [[[String?]]] {
        guard PQsendQuery(handle, sql) == 1 else { throw RawLibPQError("\(sql): \(String(cString: PQerrorMessage(handle)))") }
        var results: [[[String?]]] = []
        var failed = false
        while let result = PQgetResult(handle) {
            defer { PQclear(result) }
            let status = PQresultStatus(result)
            failed = failed || (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK)
            results.append((0..<PQntuples(result)).map { row in
                (0..<PQnfields(result)).map { column in
                    PQgetisnull(result, row, column) == 1 ? nil : String(cString: PQgetvalue(result, row, column))
                }
            })
        }
        if failed { throw RawLibPQError("\(sql): \(String(cString: PQerrorMessage(handle)))") }
        return results
    }

    func prepare(_ name: String, _ sql: String) throws {
        let result = PQprepare(handle, name, sql, 0, nil)
        defer { PQclear(result) }
        guard PQresultStatus(result) == PGRES_COMMAND_OK else { throw RawLibPQError("\(sql): \(String(cString: PQerrorMessage(handle)))") }
    }

    /// Runs a prepared statement with text parameters; the result is the caller's to `PQclear`.
    func executePrepared(_ name: String, _ parameters: [String]) throws -> OpaquePointer? {
        let copies = parameters.map { strdup($0) }
        defer { copies.forEach { free($0) } }
        let values = copies.map { UnsafePointer($0) }
        let result = values.withUnsafeBufferPointer { PQexecPrepared(handle, name, Int32(parameters.count), $0.baseAddress, nil, nil, 0) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            PQclear(result)
            throw RawLibPQError("\(name): \(String(cString: PQerrorMessage(handle)))")
        }
        return result
    }
}

struct RawLibPQError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
#endif
