/// Content whose edits leave notes for the step's line of the report (``Preferences``: a rename
/// that found nothing to move). The step executor takes them after the body, so that content a
/// store keeps from step to step (an ``InMemoryStore``'s) never reports one twice.
package protocol StepNotesCarrier {
    /// The notes left since the last call, forgotten by it.
    mutating func takeStepNotes() -> [String]
}

extension StepNotesCarrier {
    /// Takes the notes of `content` when it carries any; the content's value is unchanged.
    static func takeNotes<Content>(from content: inout Content) -> [String] {
        guard var carrier = content as? Self else { return [] }
        let notes = carrier.takeStepNotes()
        guard !notes.isEmpty, let taken = carrier as? Content else { return notes }
        content = taken
        return notes
    }
}
