/// The terminal palettes pictures are drawn in: the xterm 256-colour palette (its 6×6×6 colour
/// cube from 16 and its 24 greys from 232, the values every xterm-compatible terminal uses)
/// and the 16 ANSI colours (xterm's defaults; themes vary them). A value; any thread.
public enum TerminalPalette {
    static let cube: [Int] = [0, 95, 135, 175, 215, 255]

    /// The nearest cube level for one channel (0…5).
    @inline(__always) static func level(_ v: Int) -> Int { v < 48 ? 0 : (v < 115 ? 1 : (v - 35) / 40) }

    /// The nearest entry of the 256-colour palette (cube or grey ramp; never 0…15, whose
    /// colours vary by theme).
    public static func xterm256(_ r: UInt8, _ g: UInt8, _ b: UInt8) -> Int32 {
        let ri = level(Int(r)), gi = level(Int(g)), bi = level(Int(b))
        let cr = cube[ri], cg = cube[gi], cb = cube[bi]
        let cubeDistance = sq(cr - Int(r)) + sq(cg - Int(g)) + sq(cb - Int(b))
        let mean = (Int(r) + Int(g) + Int(b)) / 3
        let gi2 = mean > 238 ? 23 : max(0, (mean - 3) / 10)
        let grey = 8 + 10 * gi2
        let greyDistance = sq(grey - Int(r)) + sq(grey - Int(g)) + sq(grey - Int(b))
        return greyDistance < cubeDistance ? Int32(232 + gi2) : Int32(16 + 36 * ri + 6 * gi + bi)
    }

    static let ansi: [(Int, Int, Int)] = [(0, 0, 0), (205, 0, 0), (0, 205, 0), (205, 205, 0), (0, 0, 238), (205, 0, 205), (0, 205, 205), (229, 229, 229),
                                          (127, 127, 127), (255, 0, 0), (0, 255, 0), (255, 255, 0), (92, 92, 255), (255, 0, 255), (0, 255, 255), (255, 255, 255)]

    /// The RGB of palette entry `i` (0…255): xterm's defaults for the 16 ANSI colours, the cube,
    /// the grey ramp.
    public static func rgb(ofIndex i: Int) -> (Int, Int, Int) {
        let i = max(0, min(255, i))
        if i < 16 { return ansi[i] }
        if i < 232 { return (cube[(i - 16) / 36], cube[((i - 16) / 6) % 6], cube[(i - 16) % 6]) }
        let v = 8 + (i - 232) * 10
        return (v, v, v)
    }

    /// The nearest of the 16 ANSI colours.
    public static func ansi16(_ r: UInt8, _ g: UInt8, _ b: UInt8) -> Int32 {
        var best = 0, bestDistance = Int.max
        for (i, c) in ansi.enumerated() {
            let d = sq(c.0 - Int(r)) + sq(c.1 - Int(g)) + sq(c.2 - Int(b))
            if d < bestDistance { best = i; bestDistance = d }
        }
        return Int32(best)
    }

    @inline(__always) static func sq(_ x: Int) -> Int { x * x }
}
