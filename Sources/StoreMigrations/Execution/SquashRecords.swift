/// What the step executor needs of a squashed migration beyond its body: the range it replaces,
/// whether the replaced migrations are still registered (for the error a store part-way gets),
/// and the versions it records applied with their names and fingerprints, ascending.
package struct SquashRecords: Sendable {
    let range: ClosedRange<Version>
    let originalsRemoved: Bool
    let versions: [Version]
    let labels: [MigrationLabel]
}
