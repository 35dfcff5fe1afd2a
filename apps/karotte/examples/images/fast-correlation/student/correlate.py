"""The correlation matrix of a CSV's columns: python3 correlate.py <input.csv> <output.csv>.

Writes one line per column: the Pearson correlation of that column with every column
(population statistics), 6 decimals, comma-separated. A column that does not vary has
correlation 0 with every column, itself included.
"""
import sys


def main(source: str, target: str) -> None:
    with open(source) as f:
        rows = [[float(x) for x in line.split(",")] for line in f if line.strip()]
    n = len(rows)
    columns = len(rows[0])
    means = [sum(row[c] for row in rows) / n for c in range(columns)]
    covariance = [[0.0] * columns for _ in range(columns)]
    for row in rows:
        centered = [row[c] - means[c] for c in range(columns)]
        for i in range(columns):
            for j in range(columns):
                covariance[i][j] += centered[i] * centered[j]
    deviations = [(covariance[c][c] / n) ** 0.5 for c in range(columns)]
    with open(target, "w") as f:
        for i in range(columns):
            values = []
            for j in range(columns):
                if deviations[i] == 0 or deviations[j] == 0:
                    values.append(0.0)
                else:
                    values.append(covariance[i][j] / n / (deviations[i] * deviations[j]))
            f.write(",".join(f"{v:.6f}" for v in values) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
