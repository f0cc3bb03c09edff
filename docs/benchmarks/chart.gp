set terminal pngcairo size 1100,520 font "sans,10"
set output "chart.png"
set title "msgs/s, 1 KiB messages, loopback (higher is better; log scale)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set logscale y
set yrange [100:*]
set datafile missing "0"
set grid ytics
set key outside right top
set xtics ("(a) sync send" 0, "(b) async x64" 1, "(c) batched" 2, "(d) consume backlog" 3)
plot for [i=2:9] "chart.dat" using i title columnheader(i)
