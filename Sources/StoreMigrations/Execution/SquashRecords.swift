/// What the step executor needs of a squashed migration beyond its body: the range it replaces,
/// whether the replaced migrations are still registered (for the error a store part-way gets),
/// and the versions it records applied with their names and fingerprints, ascending.
package struct SquashRecords: Sendable {
    let range: ClosedRange<Version>
    let originalsRemoved: Bool
    let versions: [Version]
    /// The manager's labels, and the positions among them of ``versions``: read as the squash is
    /// recorded, after its body, so that a new store's fingerprints are computed while it runs.
    let labels: MigrationLabels
    let positions: Range<Int>
}
