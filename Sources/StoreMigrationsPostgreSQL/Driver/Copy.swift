import CLibPQ
import StoreMigrations

extension PostgreSQLConnection {
    /// Loads rows into a table with `COPY … FROM STDIN`, the fastest way to insert many rows.
    ///
    /// ```swift
    /// let loaded = try db.copy(into: "city", columns: ["name", "population"]) { writer in
    ///     for city in cities { try writer.append([.text(city.name), .integer(city.population)]) }
    /// }
    /// ```
    ///
    /// Rows go to the server in PostgreSQL's text format, about 64 KiB at a time, so memory stays
    /// constant however many there are. If `rows` throws, the `COPY` is abandoned (nothing is
    /// loaded) and its error rethrown; a row the server refuses fails the call with the server's
    /// error (its detail names the line).
    ///
    /// - Returns: The number of rows loaded.
    @discardableResult
    public func copy(
        into table: String, schema: String? = nil, columns: [String], _ rows: (PostgreSQLCopyWriter) throws -> Void
    ) throws -> Int {
        let qualified = (schema.map { Self.quoted($0) + "." } ?? "") + Self.quoted(table)
        let sql = "COPY \(qualified) (\(columns.map(Self.quoted).joined(separator: ", "))) FROM STDIN"
        try statementGuard?.checkOpen()
        guard let result = PQexec(handle, sql) else { throw error(result: nil, sql: sql) }
        let status = PQresultStatus(result)
        guard status == PGRES_COPY_IN else {
            defer { PQclear(result) }
            throw error(result: result, sql: sql)
        }
        PQclear(result)
        let writer = PostgreSQLCopyWriter(connection: self, columnCount: columns.count, sql: sql)
        do {
            try rows(writer)
            try writer.flush()
        } catch {
            PQputCopyEnd(handle, "abandoned by the caller")
            while let result = PQgetResult(handle) { PQclear(result) }
            throw error
        }
        guard PQputCopyEnd(handle, nil) == 1 else { throw self.error(result: nil, sql: sql) }
        var count = 0
        var failure: PostgreSQLError?
        while let result = PQgetResult(handle) {
            defer { PQclear(result) }
            if PQresultStatus(result) == PGRES_COMMAND_OK {
                count = Self.affectedRows(result)
            } else if failure == nil {
                failure = self.error(result: result, sql: sql)
            }
        }
        if let failure { throw failure }
        return count
    }
}

/// Writes the rows of one ``PostgreSQLConnection/copy(into:schema:columns:_:)``.
///
/// ```swift
/// try writer.append([.integer(1), .text("Oslo"), .null])
/// ```
public final class PostgreSQLCopyWriter {
    private let connection: PostgreSQLConnection
    private let columnCount: Int
    private let sql: String
    private var buffer: [UInt8] = []
    private static let flushSize = 64 * 1_024

    init(connection: PostgreSQLConnection, columnCount: Int, sql: String) {
        self.connection = connection
        self.columnCount = columnCount
        self.sql = sql
        buffer.reserveCapacity(Self.flushSize + 1_024)
    }

    /// Appends one row, one value per column in the order the copy named them.
    public func append(_ values: [PostgreSQLValue]) throws {
        guard values.count == columnCount else {
            throw connection.misuse("a COPY row has \(values.count) values for \(columnCount) columns", sql: sql)
        }
        for (index, value) in values.enumerated() {
            if index > 0 { buffer.append(UInt8(ascii: "\t")) }
            guard let text = value.textFormat else {
                buffer.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "N")])
                continue
            }
            for byte in text.utf8 {
                switch byte {
                case UInt8(ascii: "\\"): buffer.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
                case UInt8(ascii: "\t"): buffer.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
                case UInt8(ascii: "\n"): buffer.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
                case UInt8(ascii: "\r"): buffer.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
                default: buffer.append(byte)
                }
            }
        }
        buffer.append(UInt8(ascii: "\n"))
        if buffer.count >= Self.flushSize { try flush() }
    }

    func flush() throws {
        guard !buffer.isEmpty else { return }
        let status = buffer.withUnsafeBufferPointer { bytes in
            bytes.withMemoryRebound(to: CChar.self) { PQputCopyData(connection.handle, $0.baseAddress, Int32($0.count)) }
        }
        guard status == 1 else { throw connection.error(result: nil, sql: sql) }
        buffer.removeAll(keepingCapacity: true)
    }
}
