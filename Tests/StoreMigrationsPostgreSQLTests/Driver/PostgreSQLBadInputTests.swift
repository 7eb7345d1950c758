import Foundation
import Testing
@testable import StoreMigrations
@testable import StoreMigrationsPostgreSQL
import TestSupport

/// Bad input: each a typed error naming the store, with nothing changed.
@Suite struct PostgreSQLBadInputTests {
    private func coordinator(_ store: PostgreSQLStore) throws -> MigrationCoordinator {
        let coordinator = MigrationCoordinator(appVersion: "1")
        try coordinator.manager("service", store: store).register("1") { db in try db.execute("CREATE TABLE t(id int)") }
        return coordinator
    }

    @Test func aWrongPasswordIsATypedErrorNamingTheStore() throws {
        let database = try PostgreSQLTestDatabase()
        let store = try PostgreSQLStore(database.server.tcpConnectionString(database: database.name, password: "wrong"))
        let error = try #require(throws: PostgreSQLError.self) { try store.readRecords() }
        #expect(error.kind == .connectionFailed)
        #expect(error.sqlState == "28P01")
        #expect(error.store == store.description)
        #expect(error.message.contains("password authentication failed for user \"postgres\""))
        #expect(!error.description.contains("wrong"))
        #expect(error.action == "Nothing was changed. Check the user and password the store connects with.")
        let planning = try #require(throws: MigrationError.self) { try coordinator(store).run() }
        #expect(planning.description == "The level of manager \"service\" cannot be read. \(error)")
        #expect(try database.tables() == [])
        // The right password over the same route works.
        let good = try PostgreSQLStore(database.server.tcpConnectionString(database: database.name))
        #expect(try good.readRecords().isEmpty)
    }

    @Test func anUnreachableServerIsATypedErrorNeverAFirstLaunch() throws {
        let port = try PostgreSQLServer.freePort()
        let store = try PostgreSQLStore("host=127.0.0.1 port=\(port) dbname=app user=app connect_timeout=2")
        let error = try #require(throws: PostgreSQLError.self) { try store.readRecords() }
        #expect(error.kind == .connectionFailed)
        #expect(error.store == "PostgreSQL database app on 127.0.0.1:\(port), schema public")
        // libpq's "Is the server running on that host …?" hint line is left out: the action says it.
        let failure = "Could not connect to PostgreSQL database app on 127.0.0.1:\(port), schema public: connection to "
            + "server at \"127.0.0.1\", port \(port) failed: Connection refused. Nothing was changed. Check that the "
            + "server runs and that the host and port are right."
        #expect(error.description == failure)
        // Planning names the store and says nothing was changed once, through the store's own message.
        let planning = try #require(throws: MigrationError.self) { try coordinator(store).plan() }
        #expect(planning == .unreadableState(manager: "service", store: store.description, reason: failure))
        #expect(planning.description == "The level of manager \"service\" cannot be read. " + failure)
    }

    @Test func aMissingSocketSaysOneCauseAndOneAction() throws {
        let folder = try TemporaryFolder()
        let store = try PostgreSQLStore("host=\(folder.url.path) port=5432 dbname=app user=app")
        let error = try #require(throws: PostgreSQLError.self) { try store.readRecords() }
        #expect(error.description == "Could not connect to PostgreSQL database app on \(folder.url.path):5432, schema "
            + "public: connection to server on socket \"\(folder.url.path)/.s.PGSQL.5432\" failed: No such file or "
            + "directory. Nothing was changed. Check that the server runs and that the host and port are right.")
    }

    @Test func anUnknownRoleIsAdvisedAboutTheRoleNotTheHost() throws {
        let server = try PostgreSQLServer.start()
        let socket = server.socketDirectory.path
        let store = try PostgreSQLStore("host=\(socket) port=\(server.port) user=no_such_role dbname=postgres")
        let error = try #require(throws: PostgreSQLError.self) { try store.readRecords() }
        #expect(error.kind == .connectionFailed)
        #expect(error.sqlState == "28000")
        #expect(error.description == "Could not connect to PostgreSQL database postgres on \(socket):\(server.port), "
            + "schema public: connection to server on socket \"\(socket)/.s.PGSQL.\(server.port)\" failed: role "
            + "\"no_such_role\" does not exist. SQLSTATE 28000. Nothing was changed. Connect as an existing role, or "
            + "create this one (CREATE ROLE … LOGIN).")
    }

    @Test func aConnectionStringThatDoesNotParseIsATypedErrorWithoutItsPassword() throws {
        let error = try #require(throws: PostgreSQLError.self) { try PostgreSQLStore("host=db password=hunter2 dbname") }
        #expect(error.kind == .invalidConnectionString)
        #expect(error.message == "missing \"=\" after \"dbname\" in connection info string")
        #expect(error.store == "PostgreSQL store with connection string \"host=db password=*** dbname\"")
        #expect(!error.description.contains("hunter2"))
        let uri = try #require(throws: PostgreSQLError.self) { try PostgreSQLStore("postgresql://app:hunter2@db/x?no_such_option=1") }
        #expect(uri.kind == .invalidConnectionString)
        #expect(uri.message == "invalid URI query parameter: \"no_such_option\"")
        #expect(uri.store == "PostgreSQL store with connection string \"postgresql://app:***@db/x?no_such_option=1\"")
        #expect(!uri.description.contains("hunter2"))
    }

    /// A value libpq refuses is the connection string's fault, not the server's nor the network's.
    @Test(arguments: [("sslmode=bogus", "sslmode"), ("port=abc", "port")])
    func anOptionValueLibpqRefusesNamesTheOptionNotTheServer(option: String, name: String) throws {
        let store = try PostgreSQLStore("host=/nonexistent dbname=app password=hunter2 \(option)")
        let error = try #require(throws: PostgreSQLError.self) { try store.readRecords() }
        #expect(error.kind == .invalidConnectionString)
        #expect(error.message.hasPrefix("invalid ") && error.message.contains(name), "\(error.message)")
        #expect(error.description.contains("Fix the connection string: the option the message names"), "\(error)")
        #expect(!error.description.contains("server runs"), "\(error)")
        #expect(!error.description.contains("hunter2"))
    }

    /// A transform returning a column it did not list names the table, the column and the
    /// migration, and writes nothing.
    @Test func aTransformWritingAnUnlistedColumnNamesTableColumnAndMigration() throws {
        let database = try PostgreSQLTestDatabase()
        try database.connect().execute(
            "CREATE TABLE event(id bigserial PRIMARY KEY, title text, guid text); INSERT INTO event(title) VALUES ('a'), ('b')")
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let library = try coordinator.manager("library", store: try database.store())
        library.registerResumable("2.0", transformingRowsOf: "event", columns: ["title"]) { _ in
            ["title": .text("x"), "guid": .text("g")]
        }
        let error = try #require(throws: MigrationRunError.self) { try coordinator.run() }
        let cause = try #require(error.underlyingError as? PostgreSQLError, "\(error)")
        #expect(cause.kind == .unlistedColumn(table: "event", column: "guid"))
        #expect(cause.migration == MigrationReference(manager: "library", version: "2.0"))
        #expect(cause.description.contains("returned a value for column guid of table event: it is not among the columns it may write (title)."),
            "\(cause)")
        #expect(cause.description.hasSuffix("List guid in the transform's columns."), "\(cause)")
        #expect(try database.connect().rows("SELECT title FROM event ORDER BY id").map { try $0[0] as String } == ["a", "b"])
    }

    @Test func aLevelsTableOfAnotherShapeIsNeverWrittenTo() throws {
        let database = try PostgreSQLTestDatabase()
        try database.connect().execute(
            "CREATE TABLE store_migrations_levels(id serial PRIMARY KEY, name text); INSERT INTO store_migrations_levels(name) VALUES ('theirs')")
        let store = try database.store()
        let error = try #require(throws: PostgreSQLError.self) { try store.readRecords() }
        #expect(error.kind == .foreignStoreTable(table: "public.store_migrations_levels"))
        #expect(error.sqlState == "42703")
        #expect(error.store == store.description)
        #expect(error.message.hasSuffix("its columns are id, name"))
        let during = try #require(throws: PostgreSQLError.self) { try store.transaction { _, _ in } }
        #expect(during.kind == .foreignStoreTable(table: "public.store_migrations_levels"))
        #expect(throws: MigrationError.self) { try coordinator(store).run() }
        #expect(try database.tables() == ["store_migrations_levels"])
        #expect(try database.columns(of: "store_migrations_levels") == ["id", "name"])
        #expect(try database.connect().scalar("SELECT name FROM store_migrations_levels", as: String.self) == "theirs")
        #expect(try database.advisoryLocks() == 0)
    }

    @Test func waitingPastTheLockTimeoutNamesTheHolder() throws {
        let database = try PostgreSQLTestDatabase()
        let store = try database.store(lockTimeout: .milliseconds(300))
        let holder = try database.connect()
        try holder.execute("SELECT pg_advisory_lock($1)", arguments: [.integer(store.lockKey)])
        let started = ContinuousClock.now
        let error = try #require(throws: MigrationRunError.self) { try coordinator(store).run() }
        #expect(ContinuousClock.now - started >= .milliseconds(300))
        let failure = try #require(error.underlyingError as? PostgreSQLError)
        #expect(failure.kind == .lockTimeout(holderPID: holder.serverProcessID))
        #expect(failure.store == store.description)
        #expect(failure.migration == MigrationReference(manager: "service", version: "1"))
        #expect(failure.description.contains("held by the server process \(holder.serverProcessID)"))
        #expect(try database.tables() == [])
    }

    @Test func theLockKeyIsDerivedFromTheSchemaAndTableAsDocumented() throws {
        #expect(AdvisoryLock.key(schema: "public", table: "store_migrations_levels") == AdvisoryLock.key(schema: "public", table: "store_migrations_levels"))
        #expect(try PostgreSQLStore("dbname=a").lockKey == PostgreSQLStore("host=elsewhere dbname=b").lockKey)
        #expect(try PostgreSQLStore("dbname=a", schema: "other").lockKey != PostgreSQLStore("dbname=a").lockKey)
        // FNV-1a 64 of "store_migrations:public.store_migrations_levels", computed independently.
        var hash: UInt64 = 14_695_981_039_346_656_037
        for byte in Array("store_migrations:public.store_migrations_levels".utf8) { hash = (hash ^ UInt64(byte)) &* 1_099_511_628_211 }
        #expect(try PostgreSQLStore("dbname=a").lockKey == Int64(bitPattern: hash))
    }
}
