# chart.gp — the benchmark chart: Weft beside NPTL per metric, log scale.
# gnuplot -e "data='FILE'; out='PNG'; title='...'" bench/chart.gp
# FILE: "key weft_ns nptl_ns" per line, "?" where a backend has no number.
set encoding utf8
set terminal pngcairo size 1400,720 font "sans,10" noenhanced
set output out
set title title
set datafile missing "?"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set logscale y 10
set yrange [1e-10:*]
set format y "%.0s %cs"
set ylabel "time per operation (log scale; lower is better)"
set xtics rotate by -40 nomirror
set ytics nomirror
set grid ytics
set key top left
set lmargin 12
set bmargin 9
plot data using ($2*1e-9):xtic(1) title "Weft" linecolor rgb "#1b9e77", \
     ''   using ($3*1e-9)         title "NPTL" linecolor rgb "#d95f02"
