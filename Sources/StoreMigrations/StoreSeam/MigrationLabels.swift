/// Each migration's name and fingerprint of a manager frozen for a plan or run, by position
/// (ascending version): what plans and reports show and what the step executor records with an
/// applied migration. Fingerprints are computed here, once per plan, from the registrations'
/// texts.
///
/// Most apps name few migrations or none: without any name or fingerprint, the arrays stay
/// empty and a launch pays nothing for them.
struct MigrationLabels: Sendable {
    /// By position, when any migration has a name; else empty.
    let names: [String?]
    /// By position, when any migration has a fingerprint; else empty.
    let fingerprints: [MigrationFingerprint?]

    init(_ options: [MigrationOptions]) {
        names = options.contains { $0.name != nil } ? options.map(\.name) : []
        fingerprints = options.contains { $0.fingerprint != nil } ? options.map { $0.fingerprint.map(MigrationFingerprint.init(of:)) } : []
    }

    /// The migration at `position`'s name and fingerprint.
    subscript(position: Int) -> MigrationLabel {
        MigrationLabel(
            name: names.isEmpty ? nil : names[position], fingerprint: fingerprints.isEmpty ? nil : fingerprints[position])
    }
}

/// One migration's name and fingerprint, recorded with it when it is applied.
package struct MigrationLabel: Sendable, Hashable {
    package var name: String?
    package var fingerprint: MigrationFingerprint?

    package init(name: String? = nil, fingerprint: MigrationFingerprint? = nil) {
        self.name = name
        self.fingerprint = fingerprint
    }
}
