# zsh-complete.zsh DIR LINE: what zsh's own completion system (compinit, the _cordon
# function from DIR, DIR also first on PATH) shows after LINE<TAB>, as the
# raw terminal output of an interactive zsh on a pty (zsh/zpty).
zmodload zsh/zpty
zpty z zsh -f -i
zpty -w z "PS1='%% '; PATH=$1:\$PATH; fpath=($1 \$fpath); autoload -U compinit; compinit -u -D; LISTMAX=0; unsetopt beep; setopt nolistambiguous; bindkey '^I' complete-word"
zpty -w z "print MARK-\$((6*7))"
out=
while zpty -r -t z chunk 2>/dev/null || sleep 0.1; do
    out+=$chunk
    [[ $out == *MARK-42* ]] && break
done
zpty -w -n z "$2"$'\t'
sleep 0.5
out=
for i in {1..20}; do
    zpty -r -t z chunk && out+=$chunk || sleep 0.1
done
print -r -- "$out"
zpty -d z
