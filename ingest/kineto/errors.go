package kineto

import "fmt"

// FormatError is bad input: it names the file, the byte offset in the
// (decompressed) JSON and what was expected there.
type FormatError struct {
	Path       string
	Offset     int64
	Compressed bool // Offset counts bytes of the gzip stream, not of the JSON
	Msg        string
}

func (e *FormatError) Error() string {
	unit := "byte"
	if e.Compressed {
		unit = "compressed byte"
	}
	return fmt.Sprintf("%s: %s %d: %s", e.Path, unit, e.Offset, e.Msg)
}

// pickleHelp says how to get JSON instead of a pickle.
const pickleHelp = `a pickle is never deserialized (it can run code); re-export it as JSON in your own environment:
    import json, torch
    snapshot = torch.cuda.memory._snapshot()
    json.dump(snapshot, open("snapshot.json", "w"))`
