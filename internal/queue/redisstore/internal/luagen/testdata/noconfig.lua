-- noconfig: names a field but never calls config()
return adm.next
