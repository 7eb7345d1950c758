import CLibPQ
import StoreMigrations

/// A statement compiled once on the server by ``PostgreSQLConnection/prepare(_:)`` and run many
/// times: for loops that would otherwise send and plan the same SQL on every row.
///
/// ```swift
/// let rename = try db.prepare("UPDATE account SET handle = $1 WHERE id = $2")
/// for (id, handle) in renames { try rename.execute(arguments: [.text(handle), .integer(id)]) }
/// ```
///
/// The statement lives on the connection until it is released; it is deallocated then (or, if
/// the step's transaction has failed by then, once it has ended).
public final class PostgreSQLStatement {
    /// The statement's SQL.
    public let sql: String
    let name: String
    private let connection: PostgreSQLConnection

    init(connection: PostgreSQLConnection, name: String, sql: String) {
        self.connection = connection
        self.name = name
        self.sql = sql
    }

    deinit {
        if connection.transactionStatus == PQTRANS_INERROR || connection.isBroken {
            connection.staleStatements.append(name)
        } else {
            PQclear(PQexec(connection.handle, "DEALLOCATE \(name)"))
        }
    }

    /// Runs the statement with `arguments` for its parameters; returns the number of rows it
    /// changed.
    @discardableResult
    public func execute(arguments: [PostgreSQLValue] = []) throws -> Int {
        try connection.guarded(sql) {
            try connection.withParameters(arguments) { count, _, values in
                try connection.check(PQexecPrepared(connection.handle, name, count, values, nil, nil, 0), sql: sql) {
                    PostgreSQLConnection.affectedRows($0)
                }
            }
        }
    }

    /// Runs the statement with `arguments` for its parameters; returns its rows.
    public func rows(arguments: [PostgreSQLValue] = []) throws -> [PostgreSQLRow] {
        try connection.guarded(sql) {
            try connection.withParameters(arguments) { count, _, values in
                try connection.check(PQexecPrepared(connection.handle, name, count, values, nil, nil, 0), sql: sql) {
                    connection.rows(of: $0, sql: sql)
                }
            }
        }
    }
}
