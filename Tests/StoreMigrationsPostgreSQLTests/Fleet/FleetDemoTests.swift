import Foundation
import Testing
import TestSupport

/// `fleet-demo` on a small fleet, a process of its own with its own server: four workers, one
/// killed while it holds a tenant, the other three finish the fleet, and the status names every
/// worker.
@Suite struct FleetDemoTests {
    @Test func fourWorkersOneKilledTheStatusAfter() throws {
        let folder = try TemporaryFolder()
        let demo = try builtExecutable(named: "fleet-demo", override: "FLEET_DEMO")
        let child = try ChildProcess(executable: demo, arguments: ["--tenants", "120"], logs: folder.url)
        let exit = try #require(child.wait(timeout: eventWaitBound), "fleet-demo ended")
        #expect(exit.status == 0, "\(exit)")
        let output = exit.standardOutput
        #expect(output.contains("Fleet plan to app version 2.1: 120 tenants, 120 to migrate, 0 up to date."), "\(output)")
        #expect(output.contains("Killed worker-2 (SIGKILL) while it held"), "\(output)")
        #expect(output.contains("worker-2 (killed):"), "\(output)")
        let status = try #require(output.range(of: "The fleet's status, as any machine reads it:\n").map { output[$0.upperBound...] })
        #expect(status.hasPrefix("Fleet status to app version 2.1: "))
        // The workers start together, but on a busy machine one may still be descheduled while the
        // others migrate the whole fleet: the status names each survivor that migrated a tenant.
        var survivorsNamed = 0
        for worker in ["worker-1", "worker-3", "worker-4"] {
            let report = try #require(output.range(of: "\(worker) (exit 0):\n").map { output[$0.upperBound...] }, "\(output)")
            if report.prefix(while: { $0 != "\n" }).contains(" 0 migrated,") {
                #expect(!status.contains("worker \(worker): "), "\(status)")
            } else {
                #expect(status.contains("worker \(worker): "), "\(status)")
                survivorsNamed += 1
            }
        }
        #expect(survivorsNamed > 0, "\(output)")
        #expect(output.contains("A fifth look at the fleet:\nFleet plan to app version 2.1: 120 tenants, up to date.\n"), "\(output)")
    }
}
