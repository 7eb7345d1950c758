import Foundation
import StoreMigrations
import Testing
import TestSupport

/// The randomized differential test of issue 26: generated scenarios run on the real coordinator
/// (in-memory, preferences-file, UserDefaults and SQLite stores) and on the reference model; any
/// difference in plans, calls, step outcomes, records, data or errors is shrunk to a minimal
/// scenario and printed with its seed.
///
/// `MODEL_SCENARIOS` sets how many scenarios run (default 2,000; a soak runs 100,000);
/// `MODEL_SEED` replays one seed.
@Suite struct ModelTests {
    @Test func generatedScenariosAgreeWithTheModel() throws {
        let environment = ProcessInfo.processInfo.environment
        let seeds: [UInt64]
        if let seed = environment["MODEL_SEED"].flatMap({ UInt64($0) }) {
            seeds = [seed]
        } else {
            seeds = Array(1...UInt64(environment["MODEL_SCENARIOS"].flatMap { Int($0) } ?? 2_000))
        }
        // By kind of divergence, its first seed and how many seeds showed it.
        var divergences: [String: (seed: UInt64, count: Int)] = [:]
        var order: [String] = []
        for seed in seeds {
            let differences = try Self.differences(in: ScenarioGenerator.scenario(seed: seed))
            guard let first = differences.first else { continue }
            let kind = Self.kind(of: first)
            if divergences[kind] == nil { order.append(kind) }
            divergences[kind, default: (seed, 0)].count += 1
        }
        var reports: [String] = []
        for kind in order.prefix(12) {
            let (seed, count) = divergences[kind]!
            let shrunk = Shrinker.shrink(ScenarioGenerator.scenario(seed: seed)) { candidate in
                guard let first = (try? Self.differences(in: candidate))?.first else { return false }
                return Self.kind(of: first) == kind
            }
            let differences = (try? Self.differences(in: shrunk)) ?? []
            reports.append("""
                Divergence "\(kind)" in \(count) of \(seeds.count) scenarios; first seed \(seed) (MODEL_SEED=\(seed) replays it).
                Shrunk scenario (\(shrunk.managers.map(\.migrations.count).reduce(0, +)) registrations):
                \(shrunk)
                Model and real outcomes differ:
                \(differences.joined(separator: "\n"))
                """)
        }
        let summary = "\(seeds.count) scenarios, \(divergences.values.map(\.count).reduce(0, +)) diverging, \(order.count) kinds"
        print("ModelTests: " + summary)
        for report in reports { print(report + "\n") }
        #expect(divergences.isEmpty, "\(summary)\n\(reports.joined(separator: "\n\n"))")
    }

    /// The model's and the real coordinator's outcomes of `scenario`, compared.
    static func differences(in scenario: ModelScenario) throws -> [String] {
        let model = ReferenceModel.outcome(of: scenario)
        let folder = try TemporaryFolder()
        do {
            return model.differences(from: try StoreHarnesses.outcome(of: scenario, in: folder))
        } catch {
            return ["the real run threw outside any run: \(error)"]
        }
    }

    /// A difference without its launch, managers and values: the same bug in another scenario.
    /// Results are told apart by the errors and step outcomes each side names.
    static func kind(of difference: String) -> String {
        var field = difference
        var sides = ""
        if let colon = field.range(of: ": model") {
            field = String(field[..<colon.lowerBound])
            let values = difference[colon.upperBound...].components(separatedBy: ", real ")
            if field.hasSuffix("result"), values.count == 2 {
                sides = " model " + outcomeWords(values[0]) + " real " + outcomeWords(values[1])
            }
        }
        field = field.replacingOccurrences(of: #"launch \d+ "#, with: "", options: .regularExpression)
        return field.replacingOccurrences(of: #"m\d+"#, with: "m*", options: .regularExpression) + sides
    }

    /// The distinct refusals and step outcomes named in a result's text, sorted.
    private static func outcomeWords(_ text: String) -> String {
        let pattern = #"(refused\(\[[A-Za-z]+|=[A-Za-z]+(\([A-Za-z]+\))?)"#
        let regex = try! NSRegularExpression(pattern: pattern)
        let words = regex.matches(in: text, range: NSRange(text.startIndex..., in: text)).map { match in
            String(text[Range(match.range, in: text)!])
        }
        return "{" + Set(words).sorted().joined(separator: " ") + "}"
    }
}
