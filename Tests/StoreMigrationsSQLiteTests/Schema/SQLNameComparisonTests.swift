import Foundation
import Testing
@testable import StoreMigrationsSQLite

/// Names of a declared schema compare as Foundation's case-insensitive comparison says: the ASCII
/// path must answer as it does for every pair, and non-ASCII names keep Unicode's folding.
@Suite struct SQLNameComparisonTests {
    @Test func theASCIIPathAnswersAsFoundationForAwkwardNames() {
        var names = [
            "", "a", "A", "b", "id", "ID", "Id", "iD", "t0_on_name", "T0_ON_NAME", "t0_on_nam", "t0_on_namf",
            "my \"table\"", "MY \"TABLE\"", "my \"tablE\"", "@", "`", "[", "{", "]", "}", "^", "~", "_", "\u{7f}",
            "\u{0}", "a\u{0}", "A\u{0}", "é", "É", "e\u{301}", "E\u{301}", "ß", "SS", "ss", "K", "\u{212a}", "k",
            "ı", "I", "i", "İ", "名前", "名前a", "名前A", "naïve", "NAÏVE", "Straße", "STRASSE", "strasse",
            String(repeating: "x", count: 300), String(repeating: "X", count: 300),
        ]
        // Every pair of ASCII bytes, alone: only letters fold.
        names += (0..<128).map { String(UnicodeScalar(UInt8($0))) }
        for left in names {
            for right in names {
                #expect(
                    left.isSameSQLName(as: right) == (left.caseInsensitiveCompare(right) == .orderedSame),
                    "\(left.debugDescription) and \(right.debugDescription)")
            }
        }
    }

    @Test func aDeclarationNamesItsColumnsInAnyCaseAndNonASCIINamesFoldAsUnicode() {
        let table: DeclaredSchema.Table = .table(
            "Notes", primaryKey: ["ID"], columns: [.column("id", .integer), .column("Titre_é", .text)],
            indexes: [.index("notes_on_title", on: ["TITRE_É"])])
        #expect(DeclaredSchema([table]).problems().isEmpty)
        #expect(table.column(named: "TITRE_É")?.name == "Titre_é")
        #expect(table.column(named: "titre_e") == nil)
        let misspelt: DeclaredSchema.Table = .table(
            "notes", primaryKey: ["idd"], columns: [.column("id", .integer)])
        #expect(DeclaredSchema([misspelt]).problems().map(\.column) == ["idd"])
    }
}
