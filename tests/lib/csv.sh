# tests/lib/csv.sh: sourced by shell tests that read a report's CSV cell by cell.
# An awk function splitting a CSV line into F[1..n], quotes honoured.
split_csv='
	function split_csv(line,   n, i, ch, f, inq) {
		n = 0; f = ""; inq = 0
		for (i = 1; i <= length(line); i++) {
			ch = substr(line, i, 1)
			if (inq) {
				if (ch == "\"") {
					if (substr(line, i + 1, 1) == "\"") { f = f "\""; i++ } else inq = 0
				} else f = f ch
			} else if (ch == "\"") inq = 1
			else if (ch == ",") { F[++n] = f; f = "" }
			else f = f ch
		}
		F[++n] = f
		return n
	}'
# csv_cell ROW COLUMN [KEY]: from CSV on stdin, the cell COLUMN (from 1) of the row whose cell KEY (default 1) is ROW
csv_cell() {
	awk -v q="$1" -v c="$2" -v k="${3:-1}" "$split_csv"'
		NR > 1 { split_csv($0); if (F[k] == q) { print F[c]; exit } }'
}
