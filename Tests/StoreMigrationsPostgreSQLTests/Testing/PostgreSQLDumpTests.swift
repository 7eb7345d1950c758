import Foundation
import StoreMigrations
import StoreMigrationsPostgreSQL
import StoreMigrationsPostgreSQLTesting
import StoreMigrationsTesting
import Testing
import TestSupport

/// A schema with an enum, a domain, a composite and a range type, functions called by a
/// default and a check, a function that reads a table, a trigger, a `serial` column and grants
/// to a role, dumped and restored into a schema of another name: the same schema, the trigger
/// not fired by the restored rows but by new ones, the serial sequence owned by its column.
@Suite struct PostgreSQLDumpTests {
    let database: PostgreSQLTestDatabase
    let folder: TemporaryFolder
    /// A role of this test's own: roles belong to the whole server, which the tests share.
    let role: String

    init() throws {
        database = try PostgreSQLTestDatabase()
        folder = try TemporaryFolder()
        role = "reader_\(database.name)"
        try database.connect().execute("CREATE ROLE \(PostgreSQLConnection.quoted(role))")
    }

    static func coordinator(
        at location: StoreLocation, connectionString: String, role: String, forgetsTrigger: Bool = false
    ) throws -> MigrationCoordinator {
        let schema = PostgreSQLConnection.quoted(location.suiteName("shop"))
        let reader = PostgreSQLConnection.quoted(role)
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let shop = try coordinator.manager("shop", store: PostgreSQLStore(connectionString, schema: location.suiteName("shop")))
        shop.register("1.0") { db in
            try db.execute("""
                CREATE TYPE \(schema).state AS ENUM ('open', 'paid', 'void');
                CREATE DOMAIN \(schema).quantity AS integer NOT NULL DEFAULT 1 CONSTRAINT positive CHECK (VALUE > 0);
                CREATE DOMAIN \(schema).opening AS \(schema).state DEFAULT 'open';
                CREATE TYPE \(schema).price AS (amount numeric(10,2), currency text);
                CREATE TYPE \(schema).span AS RANGE (subtype = numeric);
                CREATE SEQUENCE \(schema).code_seq;
                CREATE FUNCTION \(schema).next_code() RETURNS text LANGUAGE sql SET search_path = \(schema)
                    AS $$ SELECT 'C-' || nextval('code_seq') $$;
                CREATE FUNCTION \(schema).is_positive(n numeric) RETURNS boolean LANGUAGE sql IMMUTABLE AS $$ SELECT n > 0 $$;
                CREATE FUNCTION \(schema).count_edit() RETURNS trigger LANGUAGE plpgsql
                    AS $$ BEGIN NEW.edits := NEW.edits + 1; RETURN NEW; END $$;
                CREATE TABLE \(schema).item(
                    id serial PRIMARY KEY, code text NOT NULL DEFAULT \(schema).next_code(), name text NOT NULL,
                    state \(schema).state NOT NULL DEFAULT 'open', quantity \(schema).quantity, price \(schema).price,
                    valid \(schema).span, edits integer NOT NULL DEFAULT 0,
                    CONSTRAINT priced CHECK (price IS NULL OR \(schema).is_positive((price).amount)));
                CREATE FUNCTION \(schema).open_items() RETURNS bigint LANGUAGE sql
                    BEGIN ATOMIC SELECT count(*) FROM \(schema).item WHERE state = 'open'; END;
                CREATE TRIGGER item_edits BEFORE INSERT OR UPDATE ON \(schema).item FOR EACH ROW EXECUTE FUNCTION \(schema).count_edit();
                GRANT USAGE ON SCHEMA \(schema) TO \(reader);
                GRANT SELECT, INSERT ON \(schema).item TO \(reader) WITH GRANT OPTION;
                GRANT USAGE ON SEQUENCE \(schema).item_id_seq TO \(reader);
                CREATE TABLE \(schema).journal(id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY, line text);
                ALTER TABLE \(schema).journal RENAME TO ledger;
                GRANT SELECT ON ALL SEQUENCES IN SCHEMA \(schema) TO \(reader);
                REVOKE EXECUTE ON FUNCTION \(schema).open_items() FROM PUBLIC;
                GRANT EXECUTE ON FUNCTION \(schema).open_items() TO \(reader)
                """)
        }
        shop.register("1.1") { db in try db.execute("ALTER TABLE \(schema).item ADD COLUMN note text") }
        shop.register("2.0") { db in
            // The trigger now fires on updates of some columns only; the buggy migration
            // forgets to make it again where there are rows.
            try db.execute("DROP TRIGGER item_edits ON \(schema).item")
            let rows = try db.scalar("SELECT count(*) FROM \(schema).item", as: Int.self) ?? 0
            if !(forgetsTrigger && rows > 0) {
                try db.execute("""
                    CREATE TRIGGER item_edits BEFORE INSERT OR UPDATE OF name, quantity ON \(schema).item
                    FOR EACH ROW EXECUTE FUNCTION \(schema).count_edit()
                    """)
            }
        }
        return coordinator
    }

    func tester(forgetsTrigger: Bool = false) -> UpgradeTester {
        let connectionString = database.connectionString, role = role
        var tester = UpgradeTester(kinds: [.postgreSQL]) { location in
            try Self.coordinator(at: location, connectionString: connectionString, role: role, forgetsTrigger: forgetsTrigger)
        }
        tester.temporaryDirectory = folder.url
        return tester
    }

    func seed(_ tester: UpgradeTester) throws -> UpgradeFixture {
        try tester.seed(at: "1.1", into: folder.file("shop-1.1")) { stores in
            let store = try stores.store("shop", as: PostgreSQLStore.self)
            try store.transaction { _, db in
                let item = PostgreSQLConnection.quoted(store.schema) + ".item"
                try db.execute("INSERT INTO \(item)(name, quantity, price, valid) VALUES ('pen', 2, ROW(1.50, 'EUR'), '[1,5)'), ('ink', DEFAULT, NULL, NULL)")
            }
        }
    }

    func store(at location: StoreLocation) throws -> PostgreSQLStore {
        try PostgreSQLStore(database.connectionString, schema: location.suiteName("shop"))
    }

    @Test func aRestoredSchemaHasTheSameTypesFunctionsTriggersSequencesAndGrants() throws {
        let tester = tester()
        let original = try tester.makeLocation()
        defer { try? tester.discard(original) }
        try Self.coordinator(at: original, connectionString: database.connectionString, role: role).run()
        let db = try database.connect()
        let originalSchema = PostgreSQLConnection.quoted(original.suiteName("shop"))
        try db.execute("INSERT INTO \(originalSchema).item(name, quantity, price) VALUES ('pen', 2, ROW(1.50, 'EUR')), ('ink', 1, NULL)")
        let fixture = try tester.capture(original, appVersion: "2.0", into: folder.file("shop-2.0"))
        // A restored function still on the original schema would take its codes from here.
        try db.execute("SELECT setval('\(originalSchema).code_seq', 100)")

        let (restored, _) = try tester.restore(fixture)
        defer { try? tester.discard(restored) }
        let kind = PostgreSQLFixtureKind()
        let originalSnapshot = try kind.snapshot(of: store(at: original))
        #expect(try kind.snapshot(of: store(at: restored)) == originalSnapshot)
        let entries = Dictionary(originalSnapshot.map { ($0.location, $0.value) }, uniquingKeysWith: { first, _ in first })
        #expect(entries["type state"] == "CREATE TYPE state AS ENUM ('open', 'paid', 'void')")
        #expect(entries["type quantity"] == "CREATE DOMAIN quantity AS integer DEFAULT 1 NOT NULL CONSTRAINT positive CHECK ((VALUE > 0))")
        #expect(entries["type opening"] == "CREATE DOMAIN opening AS state DEFAULT 'open'::state")
        #expect(entries["type price"] == "CREATE TYPE price AS (amount numeric(10,2), currency text)")
        #expect(entries["type span"] == "CREATE TYPE span AS RANGE (SUBTYPE = numeric, MULTIRANGE_TYPE_NAME = span_multirange)")
        #expect(entries["trigger item_edits on item"]
            == "CREATE TRIGGER item_edits BEFORE INSERT OR UPDATE OF name, quantity ON item FOR EACH ROW EXECUTE FUNCTION count_edit()")
        #expect(entries["sequence item_id_seq"]
            == "CREATE SEQUENCE \"item_id_seq\" AS integer INCREMENT 1 MINVALUE 1 MAXVALUE 2147483647 START 1 OWNED BY item.id")
        #expect(entries["privileges on TABLE item"] == "\(role): INSERT*, SELECT*")
        #expect(entries["privileges on ROUTINE open_items()"] == "\(role): EXECUTE")
        #expect(entries["privileges on the schema"] == "\(role): USAGE")
        #expect(Set(entries.keys).isSuperset(of: ["function next_code()", "function is_positive(numeric)", "function count_edit()", "function open_items()"]))

        // The restored rows as they were: the trigger did not count their restore as an edit.
        let schema = PostgreSQLConnection.quoted(restored.suiteName("shop"))
        let rows = { try db.rows("SELECT id, code, name, edits FROM \(schema).item ORDER BY id").map {
            "\(try $0[0] as Int64) \(try $0[1] as String) \(try $0[2] as String) \(try $0[3] as Int64)"
        } }
        #expect(try rows() == ["1 C-1 pen 1", "2 C-2 ink 1"])
        // New rows fire the trigger, take the next serial and code (the function's search path
        // now names the restored schema), and pass the check through the restored function.
        try db.execute("INSERT INTO \(schema).item(name) VALUES ('nib')")
        try db.execute("UPDATE \(schema).item SET quantity = 3 WHERE name = 'pen'")
        #expect(try rows() == ["1 C-1 pen 2", "2 C-2 ink 1", "3 C-3 nib 1"])
        #expect(throws: PostgreSQLError.self) { try db.execute("INSERT INTO \(schema).item(name, price) VALUES ('free', ROW(0, 'EUR'))") }
        #expect(try db.scalar("SELECT \(schema).open_items()", as: Int.self) == 3)
        #expect(try db.scalar("SELECT pg_get_serial_sequence($1, 'id')", arguments: [.text("\(schema).item")], as: String.self)
            == "\(restored.suiteName("shop")).item_id_seq")
        #expect(try db.scalar(
            "SELECT has_table_privilege($1, $2, 'SELECT WITH GRANT OPTION')", arguments: [.text(role), .text("\(schema).item")], as: Bool.self) == true)
        #expect(try db.scalar(
            "SELECT has_function_privilege('public', $1, 'EXECUTE')", arguments: [.text("\(schema).open_items()")], as: Bool.self) == false)
    }

    @Test func aFixtureWithTypesFunctionsTriggersAndGrantsUpgradesLikeAFreshInstall() throws {
        let tester = tester()
        let report = try tester.check(seed(tester))
        #expect(report.upgrade.steps.map { "\($0.id)" } == ["shop@2.0"])
    }

    @Test func aTriggerTheUpgradeForgetsIsNamedByTheDiff() throws {
        let tester = tester(forgetsTrigger: true)
        let failure = try #require(throws: UpgradeCheckFailure.self) { try tester.check(seed(tester)) }
        #expect(failure.differences == [
            UpgradeDifference(
                store: "shop", upgradedFrom: "1.1", kind: .schema, location: "trigger item_edits on item",
                fresh: "CREATE TRIGGER item_edits BEFORE INSERT OR UPDATE OF name, quantity ON item FOR EACH ROW EXECUTE FUNCTION count_edit()",
                upgraded: nil),
        ])
    }

    @Test func aFixtureGrantingToARoleTheServerLacksIsRefusedNamingTheRole() throws {
        let tester = tester()
        let fixture = try seed(tester)
        let db = try database.connect()
        try db.execute("DROP ROLE \(PostgreSQLConnection.quoted(role))")
        let error = try #require(throws: UpgradeTestingError.self) { try tester.restore(fixture) }
        #expect(error.reason == .missingRole(role: role))
        #expect("\(error)".contains("\"\(role)\""))
        let schemas = try db.rows("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'shop_%'").map { try $0[0] as String }
        #expect(schemas == [])
    }
}
