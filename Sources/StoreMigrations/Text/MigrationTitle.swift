extension String {
    /// This identifier of a migration or step followed by the migration's name, as plans,
    /// reports, events and errors show it: `library@1.1 (add guids to events)`; the identifier
    /// alone for a migration without one.
    func titled(_ name: String?) -> String {
        guard let name else { return self }
        return self + " (" + name + ")"
    }
}
