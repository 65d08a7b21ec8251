/// Whether two byte strings are equal, in a time that depends on their lengths only: no early
/// exit at the first difference, so how long a check takes says nothing of where a guessed
/// tag, key, proof or token goes wrong.
public func constantTimeEqual<A: RandomAccessCollection<UInt8>, B: RandomAccessCollection<UInt8>>(_ a: A, _ b: B) -> Bool {
    var difference = a.count ^ b.count
    for i in 0..<max(a.count, b.count) {
        let x = i < a.count ? a[a.index(a.startIndex, offsetBy: i)] : 0
        let y = i < b.count ? b[b.index(b.startIndex, offsetBy: i)] : 0
        difference |= Int(x ^ y)
    }
    return difference == 0
}
