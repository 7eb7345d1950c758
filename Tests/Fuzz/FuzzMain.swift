import Foundation

// libFuzzer entry points. This file is compiled together with every file of
// Sources/StoreMigrations and Sources/StoreMigrationsSQLite into one module (see .ci/fuzz), so
// that the targets reach the internal parsers directly; SwiftPM does not build it, since
// Package.swift declares no target for this folder.

/// The code under test, one fuzz target each; `STORE_MIGRATIONS_FUZZ_TARGET` picks one, so that
/// one binary (compiled once) serves them all.
enum FuzzTarget: String, CaseIterable {
    case version
    case json
    case plist
    case sqlTokenizer = "sql-tokenizer"
    case row

    func run(_ input: UnsafeRawBufferPointer) {
        switch self {
        case .version: VersionFuzz.run(input)
        case .json: PreferencesFuzz.runJSON(input)
        case .plist: PreferencesFuzz.runPropertyList(input)
        case .sqlTokenizer: SQLTokenizerFuzz.run(input)
        case .row: RowFuzz.run(input)
        }
    }
}

let selectedTarget = ProcessInfo.processInfo.environment["STORE_MIGRATIONS_FUZZ_TARGET"].flatMap(FuzzTarget.init)

@_cdecl("LLVMFuzzerInitialize")
public func fuzzerInitialize(_ argc: UnsafeMutableRawPointer, _ argv: UnsafeMutableRawPointer) -> CInt {
    // Refused here rather than on the first input, which libFuzzer would save as a crash.
    guard selectedTarget != nil else {
        let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")
        FileHandle.standardError.write(Data("set STORE_MIGRATIONS_FUZZ_TARGET to one of: \(names)\n".utf8))
        // Not exit(): its leak check would report the message's text, still allocated.
        _exit(2)
    }
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    selectedTarget?.run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

/// Ends the run as a crash, so that libFuzzer saves the input: a property that does not hold is
/// as much a finding as a trap.
func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError(message()) }
}
