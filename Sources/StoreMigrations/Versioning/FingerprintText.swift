/// The text a migration is fingerprinted by: a string given at registration (SQL, or the author's
/// fingerprint), or a text its registration makes only when a plan or run first needs it.
@usableFromInline
package enum FingerprintText: Sendable {
    case given(String)
    case made(any MadeFingerprintText)

    /// The text, made now if it is made and no thread made it yet.
    var text: String {
        switch self {
        case .given(let text): return text
        case .made(let source): return source.text
        }
    }
}

/// A fingerprint's text that costs enough to make to be made only when needed, once: a declared
/// schema's `CREATE` statements, which its registration would otherwise write at every launch,
/// and which a fresh install needs before its first statement.
///
/// A run that computes a new store's fingerprints aside (``FingerprintTable/computeAside(on:)``)
/// calls ``prepareAside()`` there first, so that what the step needs of the registration is made
/// on another thread while the step opens its store.
@usableFromInline
package protocol MadeFingerprintText: AnyObject, Sendable {
    /// The text, made by the first thread that asks, which the others wait for.
    var text: String { get }

    /// Makes the text and whatever else the migration's step will need from the registration,
    /// for a run that prepares them aside (a declared schema's check).
    func prepareAside()
}
