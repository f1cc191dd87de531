
cd "$1" || exit 125
maxfile=$2
maxtotal=$3
maxown=$4
total=0
while IFS= read -r name; do
    # the caller's files are in the working directory; hazmat's own (the runner's displays)
    # are named by an absolute path, with a cap of their own, outside the total
    case $name in
    /*) path=$name cap=$maxown own=1 ;;
    *) path=./$name cap=$maxfile own=0 ;;
    esac
    if [ -f "$path" ] && [ ! -L "$path" ] && [ -r "$path" ]; then
        size=$(wc -c < "$path")
        if [ "$size" -gt "$cap" ]; then
            printf 'too_large %s %s\n' "$size" "$name"
        elif [ "$own" = 0 ] && [ $((total + size)) -gt "$maxtotal" ]; then
            printf 'over_total %s %s\n' "$size" "$name"
        else
            [ "$own" = 1 ] || total=$((total + size))
            printf 'file %s %s\n' "$size" "$name"
            head -c "$size" "$path"
        fi
    else
        printf 'missing 0 %s\n' "$name"
    fi
done
