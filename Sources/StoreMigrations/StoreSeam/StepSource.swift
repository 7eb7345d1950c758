/// The run and step a store's transaction works for: where its context reports progress and
/// its store reports waits. A reference and an index, so that passing it allocates nothing per
/// step (a closure capturing the step would).
package struct StepSource {
    package let run: any MigrationRunControl
    package let step: Int

    package init(run: any MigrationRunControl, step: Int) {
        self.run = run
        self.step = step
    }

    /// Steps run outside a coordinator's run (``MigrationManager/reset()``, tests).
    package static var standalone: StepSource { StepSource(run: StandaloneRun(), step: 0) }
}
