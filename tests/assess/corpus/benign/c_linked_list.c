#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct node { int value; struct node *next; };

static struct node *push(struct node *head, int value) {
    struct node *n = malloc(sizeof *n);
    n->value = value;
    n->next = head;
    return n;
}

int main(void) {
    struct node *head = NULL;
    for (int i = 0; i < 10; i++) head = push(head, i * i);
    for (struct node *p = head; p; p = p->next) printf("%d ", p->value);
    putchar('\n');
    while (head) { struct node *next = head->next; free(head); head = next; }
    return 0;
}
