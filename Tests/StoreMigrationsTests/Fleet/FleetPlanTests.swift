import Foundation
import Testing
import StoreMigrations
import TestSupport

/// The fleet plan: read-only, each tenant planned by its coordinator and the plans grouped by
/// level, pending steps, post-deploy steps held, progress and failure; its text and JSON.
@Suite struct FleetPlanTests {
    /// orders 1.0, 2.0, 2.1 (resumable), 2.1-1 (post-deploy) and settings 2.0, over seven
    /// tenants: a, b and c at orders 1.0 (c without settings), d at 2.1, e at 2.1-1, f whose
    /// template throws, g part way through 2.1.
    let stores: [String: (orders: InMemoryStore<[String]>, settings: InMemoryStore<[String]>)]
    let fleet: MigrationFleet

    init() throws {
        func applied(_ versions: [Version]) -> [AppliedMigration] { versions.map { AppliedMigration(version: $0) } }
        let settingsDone = ["settings": MigrationRecord(applied: applied(["2.0"]))]
        let records: [String: (orders: MigrationRecord, settings: [String: MigrationRecord])] = [
            "a": (MigrationRecord(applied: applied(["1.0"])), settingsDone),
            "b": (MigrationRecord(applied: applied(["1.0"])), settingsDone),
            "c": (MigrationRecord(applied: applied(["1.0"])), [:]),
            "d": (MigrationRecord(applied: applied(["1.0", "2.0", "2.1"])), settingsDone),
            "e": (MigrationRecord(applied: applied(["1.0", "2.0", "2.1", "2.1-1"])), settingsDone),
            "g": (
                MigrationRecord(
                    applied: applied(["1.0", "2.0"]),
                    inProgress: [StepProgress(version: "2.1", cursor: "40", done: 40, total: 100, batches: 2, elapsed: 4)]),
                settingsDone
            ),
        ]
        var stores: [String: (orders: InMemoryStore<[String]>, settings: InMemoryStore<[String]>)] = [:]
        for (key, record) in records {
            stores[key] = (
                InMemoryStore<[String]>([], records: ["orders": record.orders], name: "orders of \(key)"),
                InMemoryStore<[String]>([], records: record.settings, name: "settings of \(key)")
            )
        }
        self.stores = stores
        let tenants = TenantList(keys: ["a", "b", "c", "d", "e", "f", "g"])
        fleet = MigrationFleet(appVersion: "2.1", tenants: tenants) { [stores] tenant, coordinator in
            guard let store = stores[tenant.key] else { throw TestFailure(message: "no stores for \(tenant.key)") }
            let orders = try coordinator.manager("orders", store: store.orders)
            let settings = try coordinator.manager("settings", store: store.settings)
            orders.register("1.0") { $0.append("orders@1.0") }
            orders.register("2.0") { $0.append("orders@2.0") }
            orders.registerResumable("2.1") { applied, _ in
                applied.append("orders@2.1")
                return .finished(processed: 1)
            }
            orders.register("2.1-1", options: .postDeploy) { $0.append("orders@2.1-1") }
            settings.register("2.0") { $0.append("settings@2.0") }
        }
    }

    @Test func theTextGroupsTenantsByLevelPendingStepsProgressAndFailure() throws {
        let plan = try fleet.plan(examplesPerGroup: 2)
        #expect(plan.description == """
            Fleet plan to app version 2.1: 7 tenants, 4 to migrate, 2 up to date, 1 failed.
              levels:
                orders 1.0: 3 tenants (a, b and 1 more)
                orders 2.0: 1 tenant (g)
                orders 2.1: 1 tenant (d)
                orders 2.1-1: 1 tenant (e)
                settings none: 1 tenant (c)
                settings 2.0: 5 tenants (a, b and 3 more)
              pending:
                2 tenants: orders@2.0, orders@2.1 (a, b)
                1 tenant: orders@2.0, settings@2.0, orders@2.1 (c)
                1 tenant: orders@2.1 (g)
              held for the deployment (post-deploy):
                5 tenants: orders@2.1-1 (a, b and 3 more)
              in progress: 1 tenant
                g: orders 2.1: 40% (40 of 100) in 2 batches, resumes after 40, about 6 s left
              failed: 1 tenant
                f: no stores for f
            """)
        #expect(!plan.isUpToDate && plan.toMigrate == 4 && plan.upToDate == 2 && plan.failed == 1 && plan.inProgress == 1)
    }

    @Test func planningReadsOnly() throws {
        let before = try stores.mapValues { try ($0.orders.readRecords(), $0.settings.readRecords()) }
        _ = try fleet.plan()
        for (key, store) in stores {
            #expect(try store.orders.readRecords() == before[key]!.0 && store.settings.readRecords() == before[key]!.1)
            #expect(store.orders.contents.isEmpty && store.settings.contents.isEmpty, "no body ran")
        }
    }

    @Test func tenantsPlannedAtOnceGiveThePlanOfTenantsPlannedInTurn() throws {
        let inTurn = try fleet.plan(maxTenantsInFlight: 1, examplesPerGroup: 2)
        for _ in 0..<5 { #expect(try fleet.plan(maxTenantsInFlight: 4, examplesPerGroup: 2) == inTurn) }
    }

    @Test func aFleetWithNothingToDoIsUpToDate() throws {
        let fleet = InMemoryFleet(["a", "b", "c"])
        #expect(try fleet.migrate(FleetRunOptions()).migrated == 3)
        let plan = try fleet.fleet().plan()
        #expect(plan.isUpToDate)
        #expect(plan.description == """
            Fleet plan to app version 2.1: 3 tenants, up to date.
              levels:
                orders 2.1: 3 tenants (a, b, c)
            """)
        #expect(try MigrationFleet(appVersion: "1.0", tenants: TenantList([])) { _, _ in }.plan().description
            == "Fleet plan to app version 1.0: no tenants.")
    }

    @Test func theJSONHasEveryGroup() throws {
        let plan = try fleet.plan(examplesPerGroup: 2)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let json = String(decoding: try encoder.encode(plan), as: UTF8.self)
        #expect(json == """
            {
              "appVersion" : "2.1",
              "examplesPerGroup" : 2,
              "failed" : 1,
              "failures" : [
                {
                  "message" : "no stores for f",
                  "tenant" : "f"
                }
              ],
              "held" : [
                {
                  "examples" : [
                    "a",
                    "b"
                  ],
                  "steps" : [
                    {
                      "action" : "migrate",
                      "manager" : "orders",
                      "version" : "2.1-1"
                    }
                  ],
                  "tenants" : 5
                }
              ],
              "inProgress" : 1,
              "inProgressExamples" : [
                {
                  "manager" : "orders",
                  "progress" : {
                    "batches" : 2,
                    "cursor" : "40",
                    "done" : 40,
                    "elapsed" : 4,
                    "total" : 100,
                    "version" : "2.1"
                  },
                  "tenant" : "g"
                }
              ],
              "levels" : [
                {
                  "examples" : [
                    "a",
                    "b"
                  ],
                  "level" : "1.0",
                  "manager" : "orders",
                  "tenants" : 3
                },
                {
                  "examples" : [
                    "g"
                  ],
                  "level" : "2.0",
                  "manager" : "orders",
                  "tenants" : 1
                },
                {
                  "examples" : [
                    "d"
                  ],
                  "level" : "2.1",
                  "manager" : "orders",
                  "tenants" : 1
                },
                {
                  "examples" : [
                    "e"
                  ],
                  "level" : "2.1-1",
                  "manager" : "orders",
                  "tenants" : 1
                },
                {
                  "examples" : [
                    "c"
                  ],
                  "manager" : "settings",
                  "tenants" : 1
                },
                {
                  "examples" : [
                    "a",
                    "b"
                  ],
                  "level" : "2.0",
                  "manager" : "settings",
                  "tenants" : 5
                }
              ],
              "pending" : [
                {
                  "examples" : [
                    "a",
                    "b"
                  ],
                  "steps" : [
                    {
                      "action" : "migrate",
                      "manager" : "orders",
                      "version" : "2.0"
                    },
                    {
                      "action" : "migrate",
                      "manager" : "orders",
                      "version" : "2.1"
                    }
                  ],
                  "tenants" : 2
                },
                {
                  "examples" : [
                    "c"
                  ],
                  "steps" : [
                    {
                      "action" : "migrate",
                      "manager" : "orders",
                      "version" : "2.0"
                    },
                    {
                      "action" : "migrate",
                      "manager" : "settings",
                      "version" : "2.0"
                    },
                    {
                      "action" : "migrate",
                      "manager" : "orders",
                      "version" : "2.1"
                    }
                  ],
                  "tenants" : 1
                },
                {
                  "examples" : [
                    "g"
                  ],
                  "steps" : [
                    {
                      "action" : "migrate",
                      "manager" : "orders",
                      "version" : "2.1"
                    }
                  ],
                  "tenants" : 1
                }
              ],
              "tenants" : 7,
              "upToDate" : 2
            }
            """)
        #expect(try JSONDecoder().decode(FleetPlan.self, from: Data(json.utf8)) == plan)
    }
}
