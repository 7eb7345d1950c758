/// Each migration's name and fingerprint of a manager frozen for a plan or run, by position
/// (ascending version): what plans and reports show and what the step executor records with an
/// applied migration. Fingerprints are computed once per plan, from the registrations' texts, by
/// a ``FingerprintTable``.
///
/// Most apps name few migrations or none: without any name or fingerprint, the array and the
/// table stay empty and a launch pays nothing for them.
struct MigrationLabels: Sendable {
    /// By position, when any migration has a name; else empty.
    let names: [String?]
    /// By position; empty when no migration has a fingerprint.
    let fingerprints: FingerprintTable

    /// The names `options` give, and the fingerprints of `fingerprintTexts` (by default, the
    /// texts `options` give).
    init(_ options: [MigrationOptions], fingerprintTexts: [FingerprintText?]? = nil) {
        names = options.contains { $0.name != nil } ? options.map(\.name) : []
        fingerprints = FingerprintTable(fingerprintTexts ?? options.map(\.fingerprintText))
    }

    /// The migration at `position`'s name and fingerprint: the fingerprints are computed by the
    /// first read, or waited for while another thread computes them.
    subscript(position: Int) -> MigrationLabel {
        MigrationLabel(name: names.isEmpty ? nil : names[position], fingerprint: fingerprints[position])
    }

    /// Calls `body` with the offset in `positions` and the label of each migration at
    /// `positions`, in order. The fingerprints are read once for all of them: a squash or a
    /// creation from the declared schema records hundreds, and each read by position takes the
    /// table's lock.
    func forEach(in positions: Range<Int>, _ body: (Int, MigrationLabel) -> Void) {
        let fingerprints = fingerprints.all
        for (offset, position) in positions.enumerated() {
            body(offset, MigrationLabel(
                name: names.isEmpty ? nil : names[position], fingerprint: fingerprints.isEmpty ? nil : fingerprints[position]))
        }
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
