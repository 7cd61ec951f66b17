B¨smC(yÁõì_muîKœ$=ûß†¹T3LôÕzíåÁCfÄ×ËkT÷´ž’oF oÿ¤g²¥
